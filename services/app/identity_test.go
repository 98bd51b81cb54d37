package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIdentityIsKeptAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	first, err := loadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	second, err := loadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if first.Name == "" || second.Name != first.Name {
		t.Fatalf("identity changed across a restart: %q then %q", first.Name, second.Name)
	}
	if other, err := loadIdentity(t.TempDir()); err != nil {
		t.Fatal(err)
	} else if other.Close(); other.Name == first.Name {
		t.Fatalf("two data dirs got the same identity %q", other.Name)
	}
}

func TestSecondProcessOnOneDataDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	held, err := loadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := loadIdentity(dir); err == nil || !strings.Contains(err.Error(), "in use by another sitebus process") {
		t.Fatalf("second load of a locked data dir: %v; want it refused", err)
	}
}

func TestBrokenIdentityFileIsAnErrorNotANewIdentity(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, identityFile), []byte("has spaces and / slashes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadIdentity(dir); err == nil || !strings.Contains(err.Error(), "delete the file") {
		t.Fatalf("broken identity file: %v; want an error that says how to fix it", err)
	}
}
