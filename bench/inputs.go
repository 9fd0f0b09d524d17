package bench

// EnvFrames names the environment variable that scales the generated inputs:
// the number of frames of the generated sessions behind the stream, replay,
// export, dataset and scale scenarios.
const EnvFrames = "TAPEDECK_BENCH_FRAMES"

// DefaultFrames is the size of the generated inputs when EnvFrames is unset,
// small enough to keep make bench short; use 1000000 or more for big runs.
const DefaultFrames = 100_000

// GenSeed is the generator seed of every generated input (the seed of the
// shipped samples).
const GenSeed = 1
