package kube

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"strconv"
)

// freePorts reserves n distinct loopback ports by listening on :0 and
// releasing them together; the window for a clash is tiny on a test machine.
// (harness.FreePort needs a testing.TB, which Start does not have.)
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func loopbackURL(scheme string, port int) string {
	return scheme + "://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

func randomHex(n int) string {
	buf := make([]byte, n)
	_, _ = rand.Read(buf)
	return hex.EncodeToString(buf)
}
