package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/nats-io/nuid"
)

// identity is this process's name in leases (saga ownership). It is kept
// in the data dir, so a restarted process recognises the leases its killed
// predecessor held and resumes that work at once instead of waiting for
// the leases to expire. The data dir is locked while the process runs: two
// processes sharing one identity would both think they own the same work.
type identity struct {
	Name string
	lock *os.File
}

const (
	identityFile = "identity"
	lockFile     = "sitebus.lock"
)

var identityRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// loadIdentity reads or creates the identity in dir and locks dir.
func loadIdentity(dir string) (*identity, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dir, err)
	}
	lf, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dir, err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lf.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is in use by another sitebus process; give each process its own data_dir (--data-dir)", dir)
		}
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, identityFile)
	name, err := readIdentity(path)
	if err != nil {
		_ = lf.Close()
		return nil, err
	}
	if name == "" {
		host, _ := os.Hostname()
		host = strings.Map(func(r rune) rune {
			if r == '.' || !identityRe.MatchString(string(r)) {
				return '-'
			}
			return r
		}, host)
		if host == "" {
			host = "sitebus"
		}
		name = host + "-" + nuid.Next()
		if err := writeFileAtomic(path, []byte(name+"\n")); err != nil {
			_ = lf.Close()
			return nil, fmt.Errorf("store identity: %w", err)
		}
	}
	return &identity{Name: name, lock: lf}, nil
}

func readIdentity(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read identity: %w", err)
	}
	name := strings.TrimSpace(string(data))
	if !identityRe.MatchString(name) {
		return "", fmt.Errorf("identity file %s holds %q; expected letters, digits, '-' or '_' (delete the file to get a new identity)", path, name)
	}
	return name, nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Close releases the data dir lock.
func (id *identity) Close() {
	if id != nil && id.lock != nil {
		_ = id.lock.Close()
	}
}
