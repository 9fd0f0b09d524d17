//go:build amd64 && !race

package book

// optimistic says Load and Refresh copy the current slot without pinning it
// (see Publisher.load). On amd64 loads are not reordered with loads nor
// stores with stores (x86-TSO), which the copy's validation relies on;
// under the race detector the copy would be reported as the race it
// tolerates, so race builds pin.
const optimistic = true
