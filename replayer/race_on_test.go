//go:build race

package replayer

// raceEnabled: the race detector slows replays tenfold; long tests trim
// their cases under it.
const raceEnabled = true
