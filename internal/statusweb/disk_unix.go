//go:build unix

package statusweb

import "syscall"

// diskSpace returns the bytes available to an unprivileged user and the
// size of the file system holding dir.
func diskSpace(dir string) (free, total int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Blocks) * int64(st.Bsize), nil
}
