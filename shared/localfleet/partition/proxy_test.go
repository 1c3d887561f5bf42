package partition

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// silence is how long a read through a cut proxy must get nothing: enough to tell silence from
// a refusal or a reset, which come at once.
const silence = 300 * time.Millisecond

// echoServer answers every byte it reads with the same byte.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip writes msg on c and expects it back within a second.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("writing %q: %v", msg, err)
	}
	expectRead(t, c, msg)
}

// expectRead expects msg on c within a second.
func expectRead(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("reading %q: %v", msg, err)
	}
	if string(buf) != msg {
		t.Fatalf("read %q, want %q", buf, msg)
	}
}

// expectSilence writes msg on c and expects neither an answer nor an error (a closed or reset
// connection) within silence: only the read deadline ends the read.
func expectSilence(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("writing %q across the cut: %v", msg, err)
	}
	_ = c.SetReadDeadline(time.Now().Add(silence))
	n, err := c.Read(make([]byte, 16))
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read across the cut: %d bytes, %v; want nothing until the deadline", n, err)
	}
}

func TestProxyCutIsSilentAndHealDelivers(t *testing.T) {
	p, err := Start("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	open, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = open.Close() }()
	roundTrip(t, open, "before")

	p.Cut()
	if !p.IsCut() {
		t.Fatal("IsCut false after Cut")
	}
	expectSilence(t, open, "held")
	// A new connection is accepted, not refused, and gets nothing either.
	late, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err != nil {
		t.Fatalf("dialling a cut proxy: %v; want it accepted", err)
	}
	defer func() { _ = late.Close() }()
	expectSilence(t, late, "late")

	p.Heal()
	p.Heal() // healing twice does nothing
	expectRead(t, open, "held")
	expectRead(t, late, "late")
	roundTrip(t, open, "after")
	roundTrip(t, late, "after")

	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_ = open.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := open.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) || err == nil {
		t.Fatalf("read after Close: %v; want the connection closed", err)
	}
}

func TestProxyCloseReleasesHeldConnections(t *testing.T) {
	p, err := Start("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	p.Cut()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	expectSilence(t, c, "x")
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close of a cut proxy did not return")
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("dialling a closed proxy succeeded")
	}
}

// TestProxyTargetDown: a proxy not cut in front of a stopped server ends the connection at
// once, as the server's own refusal would, rather than holding it as a cut does.
func TestProxyTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	_ = ln.Close()
	p, err := Start("127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		return // reset before the dial returned
	}
	defer func() { _ = c.Close() }()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through a proxy whose target is down: %v; want the connection ended", err)
	}
}
