//go:build !amd64 || race

package book

// optimistic is false where Load and Refresh pin the slot they copy (see
// Publisher.load): outside amd64, whose ordering of loads and of stores the
// unpinned copy relies on, and in race-detector builds.
const optimistic = false
