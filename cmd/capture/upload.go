package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/datasets/s3store"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/statusweb"
	"github.com/tapedeck/tapedeck/recorder"
)

// uploadFlags are capture run's object-storage flags.
type uploadFlags struct {
	URL     string
	Delete  bool
	Timeout time.Duration
}

func (f *uploadFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.URL, "upload", "", "upload each finished segment and its index to `s3://BUCKET/PREFIX` in the background (verified; the manifest last); see --s3-endpoint")
	fs.BoolVar(&f.Delete, "upload-delete", false, "with --upload: delete each local file once its upload is verified, and the dataset once all of it is")
	fs.DurationVar(&f.Timeout, "upload-timeout", 10*time.Minute, "with --upload: at the end, keep retrying what is not yet uploaded for at most this long")
}

func (f *uploadFlags) validate() error {
	if f.URL == "" {
		if f.Delete {
			return cli.FlagErrorf("--upload-delete needs --upload")
		}
		return nil
	}
	if _, _, err := s3store.ParseURL(f.URL); err != nil {
		return cli.FlagErrorf("--upload: %v", err)
	}
	if f.Timeout <= 0 {
		return cli.FlagErrorf("--upload-timeout %v must be positive", f.Timeout)
	}
	return nil
}

// start checks that the bucket answers (a missing bucket or refused
// credentials fail the run before anything is recorded) and starts the
// uploader; nil without --upload. Each failed attempt is logged and
// recorded in the dataset as a note; the retries never hold up recording.
func (f *uploadFlags) start(ctx context.Context, dir string, rec *recorder.Recorder, log *slog.Logger) (*s3store.Uploader, error) {
	if f.URL == "" {
		return nil, nil
	}
	st, err := s3store.Open(f.URL)
	if err != nil {
		return nil, err
	}
	if err := st.Check(ctx); err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	return s3store.NewUploader(dir, f.URL, s3store.UploaderOptions{
		Delete: f.Delete,
		OnFailure: func(name string, attempt int, err error) {
			log.Warn("upload failed; retrying", "object", name, "attempt", attempt, "err", err)
			rec.Note(datasets.Control{Reason: "upload_failed", URL: name, Attempt: attempt, Err: err.Error(),
				Text: "upload of " + name + " failed; retrying with backoff (the local copy is kept)"})
		},
		OnRecovered: func(name string, attempts int) {
			log.Info("upload verified after retries", "object", name, "attempts", attempts)
			rec.Note(datasets.Control{Reason: "upload_recovered", URL: name, Attempt: attempts,
				Text: fmt.Sprintf("upload of %s verified after %d attempts", name, attempts)})
		},
	})
}

// gatherer adds the uploader's metrics to the recorder's.
func (f *uploadFlags) gatherer(g prometheus.Gatherer, up *s3store.Uploader) prometheus.Gatherer {
	if up == nil {
		return g
	}
	reg := prometheus.NewRegistry()
	if err := up.Register(reg); err != nil {
		return g
	}
	return prometheus.Gatherers{g, reg}
}

// status is what the status page shows of the upload; nil without one.
func (f *uploadFlags) status(up *s3store.Uploader) func() *statusweb.UploadStatus {
	if up == nil {
		return nil
	}
	return func() *statusweb.UploadStatus {
		s := up.Stats()
		return &statusweb.UploadStatus{Target: up.Location(), PendingSegments: s.Pending, UploadedFiles: s.Files,
			UploadedBytes: s.Bytes, Failures: s.Failures, LastError: s.LastError}
	}
}

// finish sends what remains once the dataset is closed and prints a line.
func (f *uploadFlags) finish(up *s3store.Uploader, dir string, out io.Writer, log *slog.Logger) error {
	if up == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.Timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("uploading what remains", "to", up.Location())
	err := up.Finish(ctx)
	s := up.Stats()
	fmt.Fprintf(out, "%s\t%d files uploaded\t%d bytes\t%d failed attempts\n", up.Location(), s.Files, s.Bytes, s.Failures)
	if err != nil {
		return fmt.Errorf("upload: %w; the local dataset %s is kept: `capture upload %s %s` sends the rest", err, dir, dir, up.Location())
	}
	return nil
}

// uploadOptions are the parsed flags of `capture upload`.
type uploadOptions struct {
	Dir, URL    string
	Delete      bool
	Timeout     time.Duration
	Out, ErrOut io.Writer
}

func newUploadCmd(runF func(*uploadOptions) error) *cobra.Command {
	o := &uploadOptions{}
	cmd := &cobra.Command{
		Use:   "upload DATASET s3://BUCKET/PREFIX",
		Short: "Upload a dataset to object storage, or finish an interrupted upload",
		Long: `Upload the dataset in the local directory DATASET to s3://BUCKET/PREFIX: every
segment and index that is not already there with the same size and MD5,
each verified, then the manifest last, so that a reader never sees a
manifest before the objects it describes. It finishes what a killed
"capture run --upload" left: nothing verified is sent again. A failed
request is retried with backoff for --timeout.

A dataset whose writer was killed is uploaded as it is (its manifest says
it was not closed; readers stop cleanly at its torn tail): run "replay
repair" first to close it.`,
		Example: `  # After a capture run --upload was killed
  $ capture upload pm-day s3://tapes/2026-12-03/pm-day

  # To MinIO, removing the local copy once verified
  $ capture upload --s3-endpoint http://127.0.0.1:9000 --delete pm-day s3://tapes/pm-day`,
		Args: cli.ExactArgs("DATASET", "URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir, o.URL, o.Out, o.ErrOut = args[0], args[1], cmd.OutOrStdout(), cmd.ErrOrStderr()
			if _, _, err := s3store.ParseURL(o.URL); err != nil {
				return cli.FlagErrorf("%v", err)
			}
			if _, err := datasets.ReadManifest(o.Dir); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runUpload(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.Delete, "delete", false, "delete the local dataset once all of it is verified")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 10*time.Minute, "retry failed requests for at most this long")
	return cmd
}

func runUpload(ctx context.Context, o *uploadOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := s3store.Open(o.URL)
	if err != nil {
		return err
	}
	if err := st.Check(ctx); err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	// Each failed attempt is said, with why, as it happens (on stderr).
	up, err := s3store.NewUploader(o.Dir, o.URL, s3store.UploaderOptions{Delete: o.Delete,
		OnFailure: func(name string, attempt int, err error) {
			fmt.Fprintf(o.ErrOut, "upload: attempt %d of %s failed: %v; retrying\n", attempt, name, err)
		}})
	if err != nil {
		return err
	}
	err = up.Finish(ctx)
	s := up.Stats()
	fmt.Fprintf(o.Out, "%s\t%d files uploaded\t%d bytes\t%d failed attempts\n", up.Location(), s.Files, s.Bytes, s.Failures)
	if err != nil {
		if s.LastError != "" && !strings.Contains(err.Error(), s.LastError) {
			return fmt.Errorf("upload: %w (last failure: %s)", err, s.LastError)
		}
		return fmt.Errorf("upload: %w", err)
	}
	return nil
}

// checkRemoteOut refuses an s3:// --out whose bucket does not answer
// (missing, refused), before anything is imported, or that holds a dataset
// unless force.
func checkRemoteOut(loc string, force bool) error {
	st, err := s3store.Open(loc)
	if err != nil {
		return cli.FlagErrorf("--out: %v", err)
	}
	if err := st.Check(context.Background()); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	_, _, err = st.Stat(datasets.ManifestName)
	switch {
	case err == nil && !force:
		return cli.FlagErrorf("--out %s already holds a dataset (add --force to replace it)", loc)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// importToStore imports into a local staging directory, then uploads the
// dataset (each object verified, the manifest last) and removes the
// staging copy. With --force an old dataset there is removed first, its
// manifest before anything else, so no reader finds a manifest over a mix.
func importToStore(o *importOptions) error {
	remote := o.OutDir
	staging, err := os.MkdirTemp("", "tapedeck-import-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	st, err := s3store.Open(remote)
	if err != nil {
		return err
	}
	if o.Force {
		objs, err := st.Objects()
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		ctx := context.Background()
		if err := st.Remove(ctx, datasets.ManifestName); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("import: %w", err)
		}
		for _, ob := range objs {
			if s3store.DatasetFile(ob.Key) && ob.Key != datasets.ManifestName {
				if err := st.Remove(ctx, ob.Key); err != nil {
					return fmt.Errorf("import: %w", err)
				}
			}
		}
	}
	o.OutDir, o.remote = filepath.Join(staging, "dataset"), remote
	o.Force = false
	err = runImport(o)
	o.OutDir, o.remote = remote, ""
	if err != nil {
		return err
	}
	res, err := s3store.UploadDataset(context.Background(), filepath.Join(staging, "dataset"), remote)
	if err != nil {
		return fmt.Errorf("import: %w (nothing of it is a dataset there until its manifest is)", err)
	}
	fmt.Fprintf(o.ErrOut, "uploaded %d files (%d bytes) to %s\n", len(res.Uploaded), res.Bytes, remote)
	return nil
}
