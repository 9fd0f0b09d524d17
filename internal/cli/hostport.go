package cli

import (
	"fmt"
	"net"
	"strconv"
)

// CheckHostPort accepts a listen address HOST:PORT whose port is a number
// from 0 to 65535 (0: the system picks a free one); the host may be empty.
// It does not resolve the host: listening says whether it exists.
func CheckHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}
