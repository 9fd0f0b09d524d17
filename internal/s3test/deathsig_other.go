//go:build !linux

package s3test

import "os/exec"

// setDeathSignal does nothing here: the server is stopped by the test's
// cleanup only.
func setDeathSignal(cmd *exec.Cmd) {}
