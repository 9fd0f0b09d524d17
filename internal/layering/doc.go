// Package layering holds the tests that keep tapedeck's import rules and its
// one-place-per-venue rule true: no engine package imports a venue's own
// package (only venue and venue/registry), and the only choice of a venue
// by its name is the registry's; only cmd, replayer and recorder (and their
// servers) import the registry; recorder and replayer do not depend on each
// other; the columnar writer imports only book and the backtester does
// not depend on the event tables. It has no code.
package layering
