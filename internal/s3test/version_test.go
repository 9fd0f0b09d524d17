package s3test

import (
	"os"
	"strings"
	"testing"
)

// TestInstallScriptVersion: scripts/test-deps.sh installs the MinIO the
// tests name in their messages.
func TestInstallScriptVersion(t *testing.T) {
	b, err := os.ReadFile("../../scripts/test-deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "minio_version="+MinioVersion+"\n") {
		t.Errorf("scripts/test-deps.sh does not install minio@%s", MinioVersion)
	}
}
