package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ReadManifest reads the manifest of the dataset in dir. A directory without
// one gives an error wrapping ErrNotDataset.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return m, fmt.Errorf("%w: %s", ErrNotDataset, dir)
	}
	if err != nil {
		return m, fmt.Errorf("datasets: read manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, &CorruptionError{File: filepath.Join(dir, ManifestName), Err: fmt.Errorf("manifest: %w", err)}
	}
	if m.FormatVersion < 0 || m.FormatVersion > FormatVersion {
		return m, fmt.Errorf("%w: manifest says %d (this build reads up to %d)", ErrVersion, m.FormatVersion, FormatVersion)
	}
	return m, nil
}

// writeManifest replaces dir's manifest atomically: temp file, fsync,
// rename, fsync of the directory, so a crash leaves the old or the new one.
func writeManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("datasets: encode manifest: %w", err)
	}
	return writeFileAtomic(dir, ManifestName, append(b, '\n'))
}

func writeFileAtomic(dir, name string, b []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("datasets: write %s: %w", name, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("datasets: write %s: %w", name, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("datasets: sync dir: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("datasets: sync dir: %w", err)
	}
	return nil
}
