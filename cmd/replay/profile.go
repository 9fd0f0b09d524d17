package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// addProfileFlag registers --cpuprofile on root: every verb can write a Go
// CPU profile of its run (go tool pprof FILE), for performance work.
func addProfileFlag(root *cobra.Command) *cobra.Command {
	var path string
	var f *os.File
	root.PersistentFlags().StringVar(&path, "cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof)")
	prev := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(cmd, args); err != nil {
				return err
			}
		}
		if path == "" {
			return nil
		}
		var err error
		if f, err = os.Create(path); err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			f = nil
			return fmt.Errorf("cpuprofile: %w", err)
		}
		return nil
	}
	if root.PersistentPostRunE != nil {
		panic("addProfileFlag: root has a PersistentPostRunE")
	}
	root.PersistentPostRunE = func(cmd *cobra.Command, args []string) error {
		if f == nil {
			return nil
		}
		pprof.StopCPUProfile()
		err := f.Close()
		f = nil
		return err
	}
	return root
}
