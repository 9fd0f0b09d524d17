package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ReadManifest reads the manifest of the dataset at location (a directory
// or a URL of a registered scheme). A location without one gives an error
// wrapping ErrNotDataset.
func ReadManifest(location string) (Manifest, error) {
	st, err := OpenStore(location)
	if err != nil {
		return Manifest{}, err
	}
	return readManifestIn(st)
}

// ReadManifestFile is ReadManifest that also returns the manifest's bytes
// as read, for a caller that must pass on exactly the version it judged
// (a writer may replace the file at any moment).
func ReadManifestFile(location string) (Manifest, []byte, error) {
	st, err := OpenStore(location)
	if err != nil {
		return Manifest{}, nil, err
	}
	return readManifestBytes(st)
}

func readManifestIn(st Store) (Manifest, error) {
	m, _, err := readManifestBytes(st)
	return m, err
}

func readManifestBytes(st Store) (Manifest, []byte, error) {
	var m Manifest
	b, err := readFileMax(st, ManifestName, MaxManifestSize)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil, fmt.Errorf("%w: %s", ErrNotDataset, st.Location())
	}
	if err != nil {
		return m, nil, fmt.Errorf("datasets: read manifest: %w", err)
	}
	m, err = parseManifest(st.Join(ManifestName), b)
	return m, b, err
}

// parseManifest decodes and checks a manifest's bytes; path names it in errors.
func parseManifest(path string, b []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return m, &CorruptionError{File: path, Err: fmt.Errorf("manifest: %w", err)}
	}
	stored, sum, err := manifestChecksum(b)
	if err != nil {
		return m, &CorruptionError{File: path, Err: fmt.Errorf("manifest: %w", err)}
	}
	m.unsummed = stored == ""
	if stored != "" && stored != sum {
		return m, &CorruptionError{File: path, Err: fmt.Errorf("manifest: %w: checksum says %s, the content %s", ErrChecksum, stored, sum)}
	}
	if m.FormatVersion == 0 {
		return m, &CorruptionError{File: path, Err: fmt.Errorf("manifest: %w: format_version missing or 0", ErrVersion)}
	}
	if m.FormatVersion < 0 || m.FormatVersion > FormatVersion {
		return m, fmt.Errorf("%w: manifest says %d (this build reads up to %d)", ErrVersion, m.FormatVersion, FormatVersion)
	}
	return m, nil
}

// manifestChecksumKey is the manifest member holding its checksum.
const manifestChecksumKey = "checksum"

// manifestChecksum returns the checksum stored in a manifest's JSON ("" if
// none) and the one its content has: "crc32c:" and eight hex digits of the
// CRC32C of the compact JSON encoding of every other member, keys sorted,
// numbers as written. It does not depend on formatting or on which members
// this build knows.
func manifestChecksum(b []byte) (stored, sum string, err error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return "", "", err
	}
	if v, ok := obj[manifestChecksumKey]; ok {
		if stored, ok = v.(string); !ok || stored == "" {
			return "", "", fmt.Errorf("checksum %v is not a string", v)
		}
		delete(obj, manifestChecksumKey)
	}
	canon, err := json.Marshal(obj)
	if err != nil {
		return "", "", err
	}
	return stored, fmt.Sprintf("crc32c:%08x", crc32c(canon)), nil
}

// writeManifest replaces dir's manifest atomically: temp file, fsync,
// rename, fsync of the directory, so a crash leaves the old or the new one.
func writeManifest(dir string, m Manifest) error {
	b, err := encodeManifest(m)
	if err != nil {
		return err
	}
	return writeFileAtomic(dir, ManifestName, b)
}

// encodeManifest returns m as indented JSON with its checksum member last.
func encodeManifest(m Manifest) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("datasets: encode manifest: %w", err)
	}
	_, sum, err := manifestChecksum(b)
	if err != nil {
		return nil, fmt.Errorf("datasets: encode manifest: %w", err)
	}
	b = bytes.TrimSuffix(b, []byte("}"))
	b = bytes.TrimRight(b, "\n")
	return fmt.Appendf(b, ",\n  %q: %q\n}\n", manifestChecksumKey, sum), nil
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
