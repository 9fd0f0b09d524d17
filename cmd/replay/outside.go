package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tapedeck/tapedeck/internal/cli"
)

// outsideInputs refuses an --out path inside (or equal to, or a hard link
// to a file of) any input dataset, whatever --force says: a verb must never
// replace the data it reads. Paths are compared after resolving symbolic
// links; out need not exist yet.
func outsideInputs(verb, out string, inputs []string) error {
	return outsideInputsFlag(verb, "--out", out, inputs)
}

// outsideInputsFlag is outsideInputs for the file-writing flag named flag
// (--out, --cpuprofile, --memprofile): every verb that writes a file checks
// its path here. Inputs that are not local (s3://…) cannot hold it.
func outsideInputsFlag(verb, flag, out string, inputs []string) error {
	if out == "" || out == "-" {
		return nil
	}
	o := resolve(out)
	ofi, oerr := os.Stat(out)
	for _, in := range inputs {
		if strings.Contains(in, "://") {
			continue
		}
		d := resolve(in)
		if rel, err := filepath.Rel(d, o); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return cli.FlagErrorf("%s: %s %s is inside the input dataset %s; write it elsewhere (--force never overwrites an input)", verb, flag, out, in)
		}
		if oerr != nil || !ofi.Mode().IsRegular() {
			continue
		}
		ents, _ := os.ReadDir(in)
		for _, e := range ents {
			if fi, err := os.Stat(filepath.Join(in, e.Name())); err == nil && os.SameFile(fi, ofi) {
				return cli.FlagErrorf("%s: %s %s is the file %s of the input dataset %s; write it elsewhere", verb, flag, out, e.Name(), in)
			}
		}
	}
	return nil
}

// resolve returns p absolute with its symbolic links resolved, as far as it
// exists (the missing tail is appended as given).
func resolve(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	var tail []string
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{r}, tail...)...)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		tail = append([]string{filepath.Base(cur)}, tail...)
		cur = parent
	}
}

// noMatch is the error of every verb whose --instrument filter names
// instruments the datasets do not have: one line, exit 3 (cli.ExitProblem),
// the same words as export.Run's.
func noMatch(verb string, ids []string, outcome string) error {
	return &cli.ProblemError{Err: fmt.Errorf("%s: no instrument of the datasets matches --instrument %s: %s", verb, strings.Join(ids, ", "), outcome)}
}
