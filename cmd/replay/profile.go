package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// addProfileFlag registers --cpuprofile and --memprofile on root: every verb
// can write a Go CPU profile of its run and a heap profile at its end (go
// tool pprof FILE), for performance work. Neither path may lie inside a
// dataset the verb reads (outsideInputsFlag).
func addProfileFlag(root *cobra.Command) *cobra.Command {
	var path, memPath string
	var f *os.File
	root.PersistentFlags().StringVar(&path, "cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof)")
	root.PersistentFlags().StringVar(&memPath, "memprofile", "", "write a heap profile at the end of the run to `FILE` (go tool pprof)")
	prev := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(cmd, args); err != nil {
				return err
			}
		}
		if err := outsideInputsFlag(cmd.Name(), "--cpuprofile", path, args); err != nil {
			return err
		}
		if err := outsideInputsFlag(cmd.Name(), "--memprofile", memPath, args); err != nil {
			return err
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
		var err error
		if f != nil {
			pprof.StopCPUProfile()
			err = f.Close()
			f = nil
		}
		if memPath != "" {
			err = errors.Join(err, writeHeapProfile(memPath))
		}
		return err
	}
	return root
}

// writeHeapProfile writes the heap profile after a collection, so that it
// shows what is live at the end of the run.
func writeHeapProfile(path string) error {
	mf, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("memprofile: %w", err)
	}
	runtime.GC()
	err = pprof.WriteHeapProfile(mf)
	if cerr := mf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("memprofile: %w", err)
	}
	return nil
}
