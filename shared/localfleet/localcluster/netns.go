package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// NetNS is a named network namespace (/run/netns/<name>) with a veth pair whose ends both stay
// inside (the dummy driver is not always loaded), one end holding a non-loopback address and the default route, so that the real Node's components have an
// address to advertise and ClusterIPs are routable before kube-proxy rewrites them.
type NetNS struct {
	// Name is the namespace's name under /run/netns.
	Name string
	// Path is /run/netns/<Name>, what nsenter --net= and setns take.
	Path string
	// Addr is the interface's address, e.g. 10.200.0.1.
	Addr netip.Addr
}

// nsInterface names the addressed end of the veth pair inside the namespace.
const nsInterface = "rf0"

// CreateNetNS creates the network namespace name with prefix (e.g. 10.200.0.1/24) on a veth
// end, loopback up and IPv4 forwarding on (Pods are routed through it). Delete removes it.
func CreateNetNS(name string, prefix netip.Prefix) (*NetNS, error) {
	ns := &NetNS{Name: name, Path: filepath.Join("/run/netns", name), Addr: prefix.Addr()}
	steps := [][]string{
		{"netns", "add", name},
		{"-n", name, "link", "set", "lo", "up"},
		{"-n", name, "link", "add", nsInterface, "type", "veth", "peer", "name", nsInterface + "peer"},
		{"-n", name, "addr", "add", prefix.String(), "dev", nsInterface},
		{"-n", name, "link", "set", nsInterface + "peer", "up"},
		{"-n", name, "link", "set", nsInterface, "up"},
		{"-n", name, "route", "add", "default", "dev", nsInterface},
	}
	for i, args := range steps {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			if i > 0 {
				_ = ns.Delete()
			}
			return nil, fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	// /proc/sys/net shows the namespace of the process that opens it.
	out, err := exec.Command("nsenter", "--net="+ns.Path, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward").CombinedOutput()
	if err != nil {
		_ = ns.Delete()
		return nil, fmt.Errorf("enabling IPv4 forwarding in netns %s: %w: %s", name, err, out)
	}
	return ns, nil
}

// Delete removes the namespace; interfaces and iptables rules in it go with it once its last
// process has exited.
func (ns *NetNS) Delete() error {
	if out, err := exec.Command("ip", "netns", "delete", ns.Name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns delete %s: %w: %s", ns.Name, err, out)
	}
	return nil
}

// Close deletes the namespace, for owners that hold io.Closers.
func (ns *NetNS) Close() error { return ns.Delete() }

// AddAddress adds addr as a /32 on the namespace's loopback, e.g. another namespace's address
// for a Forward that stands in for the route between two clusters' networks.
func (ns *NetNS) AddAddress(addr netip.Addr) error {
	args := []string{"-n", ns.Name, "addr", "add", netip.PrefixFrom(addr, addr.BitLen()).String(), "dev", "lo"}
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Forward listens on listen (host:port) inside the namespace and splices each connection to
// target on the host, until the returned Closer is closed.
func (ns *NetNS) Forward(listen, target string) (io.Closer, error) {
	f, err := startForwarder(ns.Path, listen, target)
	if err != nil {
		return nil, err
	}
	return f.ln, nil
}

// inNetNS runs fn on an OS thread moved into the namespace at path. A socket keeps the
// namespace it was created in, so listeners and connections made by fn stay there.
func inNetNS(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is not unlocked: if switching back failed it must die with the goroutine
		// rather than serve other goroutines from the wrong namespace.
		errc <- func() error {
			self, err := os.Open("/proc/thread-self/ns/net")
			if err != nil {
				return fmt.Errorf("opening own netns: %w", err)
			}
			defer self.Close()
			target, err := os.Open(path)
			if err != nil {
				return fmt.Errorf("opening netns %s: %w", path, err)
			}
			defer target.Close()
			if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("entering netns %s: %w", path, err)
			}
			fnErr := fn()
			if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
				return errors.Join(fnErr, fmt.Errorf("leaving netns %s: %w", path, err))
			}
			runtime.UnlockOSThread()
			return fnErr
		}()
	}()
	return <-errc
}

// DialInNetNS connects to address (host:port) from inside the namespace at path.
func DialInNetNS(ctx context.Context, path, address string) (net.Conn, error) {
	var conn net.Conn
	err := inNetNS(path, func() error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, "tcp", address)
		return err
	})
	return conn, err
}

// Listen listens on address (host:port) inside the namespace: a socket keeps the namespace it
// was made in, so whatever serves on the listener serves there.
func (ns *NetNS) Listen(address string) (net.Listener, error) {
	var ln net.Listener
	err := inNetNS(ns.Path, func() error {
		var err error
		ln, err = net.Listen("tcp", address)
		return err
	})
	return ln, err
}

// Expose listens on listen (host:port) on the host and splices each connection to target
// inside the namespace, until the returned Closer is closed: Forward the other way round.
func (ns *NetNS) Expose(listen, target string) (io.Closer, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("listening on %s for %s in %s: %w", listen, target, ns.Path, err)
	}
	f := &forwarder{ln: ln, dial: func() (net.Conn, error) {
		return DialInNetNS(context.Background(), ns.Path, target)
	}}
	go f.serve()
	return ln, nil
}

// forwarder accepts connections on a listener and splices each to what dial connects to: a
// listener inside a namespace and a loopback address of the host (so that the API server
// stays on 127.0.0.1 while the Node and its Pods reach it at the namespace's address), or the
// other way round.
type forwarder struct {
	ln   net.Listener
	dial func() (net.Conn, error)
}

// startForwarder listens on listen (host:port) inside the namespace at nsPath and forwards to
// target on the host.
func startForwarder(nsPath, listen, target string) (*forwarder, error) {
	f := &forwarder{dial: func() (net.Conn, error) { return net.Dial("tcp", target) }}
	err := inNetNS(nsPath, func() error {
		var err error
		f.ln, err = net.Listen("tcp", listen)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listening on %s in %s: %w", listen, nsPath, err)
	}
	go f.serve()
	return f, nil
}

func (f *forwarder) serve() {
	for {
		in, err := f.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer in.Close()
			out, err := f.dial()
			if err != nil {
				return
			}
			defer out.Close()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(out, in)
				_ = out.(*net.TCPConn).CloseWrite()
				close(done)
			}()
			_, _ = io.Copy(in, out)
			_ = in.(*net.TCPConn).CloseWrite()
			<-done
		}()
	}
}

// stop closes the listener; connections still open end when either side closes them.
func (f *forwarder) stop() { _ = f.ln.Close() }
