package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// goBuild writes straight to the shared output path that every e2e
// package uses: a current output must be left alone (no relink), and a
// stale one replaced by a rename, so a process still running the old file
// keeps it.
func TestGoBuildKeepsACurrentOutputAndRenamesANewOne(t *testing.T) {
	src := t.TempDir()
	write := func(msg string) {
		t.Helper()
		for name, body := range map[string]string{
			"go.mod":  "module hello\n\ngo 1.22\n",
			"main.go": "package main\n\nfunc main() { println(\"" + msg + "\") }\n",
		} {
			if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := filepath.Join(t.TempDir(), "bin", "hello")
	inode := func() uint64 {
		t.Helper()
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	run := func(path string) string {
		t.Helper()
		b, err := exec.Command(path).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", path, err, b)
		}
		return strings.TrimSpace(string(b))
	}

	write("one")
	if err := goBuild(src, out, "."); err != nil {
		t.Fatal(err)
	}
	first := inode()
	if err := goBuild(src, out, "."); err != nil {
		t.Fatal(err)
	}
	if inode() != first {
		t.Fatal("an up-to-date output was linked again")
	}

	write("two")
	if err := goBuild(src, out, "."); err != nil {
		t.Fatal(err)
	}
	// A new inode: the old one, which a running process may be executing,
	// was not written into.
	if inode() == first {
		t.Fatal("a changed program was written into the old file, not renamed over it")
	}
	if got := run(out); got != "two" {
		t.Fatalf("new build prints %q", got)
	}
}
