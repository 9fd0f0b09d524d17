//go:build !unix

package statusweb

import "errors"

// diskSpace is not known on this system: the page shows the dataset's size
// and says so instead of the free space.
func diskSpace(dir string) (free, total int64, err error) {
	return 0, 0, errors.New("free disk space: not available on this system")
}
