// Package partition is the local fleet's network partition: a TCP proxy placed between a client
// and a server (the hub and a member's API server) that, when cut, behaves as a link dropping
// every packet rather than as a server that went away. A cut proxy keeps accepting connections
// and keeps every connection open, but forwards no byte in either direction: the client sees
// neither a refusal nor a reset, only silence, and finds out through its own timeouts, as
// across a real partition. Healed, it forwards again, held bytes and held connections included,
// as packets retransmitted after a link comes back would arrive.
// It is the local fleet's, for e2e/; hub/ and spoke/ production code never imports it.
package partition

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// dialTimeout bounds the proxy's own connection to the target, which is local.
const dialTimeout = 5 * time.Second

// Proxy forwards TCP connections from its listener to one target address, unless cut.
type Proxy struct {
	target string
	ln     net.Listener

	mu sync.Mutex
	// healed is closed while the proxy forwards and open while it is cut: every transfer waits
	// on it, so healing releases them all at once.
	healed chan struct{}
	cut    bool
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Start listens on addr ("127.0.0.1:0" picks a port) and forwards every connection to target.
func Start(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("proxy to %s: %w", target, err)
	}
	healed := make(chan struct{})
	close(healed)
	p := &Proxy{target: target, ln: ln, healed: healed, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the address the proxy listens on (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut stops forwarding: new connections are accepted and held, open ones go silent. Cutting a
// cut proxy does nothing.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		p.cut = true
		p.healed = make(chan struct{})
	}
}

// Heal forwards again, held bytes and connections first. Healing a proxy not cut does nothing.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		p.cut = false
		close(p.healed)
	}
}

// IsCut reports whether the proxy is cut.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// Close stops listening and closes every connection, held ones included, and waits for the
// proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	err := p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	if p.cut {
		// Releases the transfers waiting on a heal; they then find their connections closed.
		p.cut = false
		close(p.healed)
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// accept takes connections until the listener is closed.
func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			_ = c.Close()
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// track records an open connection so that Close closes it; false once the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// untrack closes a connection and forgets it.
func (p *Proxy) untrack(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// gate blocks while the proxy is cut; false when the proxy closed meanwhile.
func (p *Proxy) gate() bool {
	p.mu.Lock()
	healed := p.healed
	p.mu.Unlock()
	<-healed
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed
}

// serve forwards one client connection: the target is dialled only once the proxy forwards,
// as a connection attempt across a partition gets no answer until it heals.
func (p *Proxy) serve(client net.Conn) {
	defer p.untrack(client)
	if !p.gate() {
		return
	}
	upstream, err := net.DialTimeout("tcp", p.target, dialTimeout)
	if err != nil {
		// A reset, the nearest a connection already accepted gets to the refusal a client of a
		// stopped server would see.
		if tc, ok := client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		return
	}
	if !p.track(upstream) {
		_ = upstream.Close()
		return
	}
	defer p.untrack(upstream)
	ended := make(chan bool, 2)
	go func() { ended <- p.pump(upstream, client) }()
	go func() { ended <- p.pump(client, upstream) }()
	// A side that closed cleanly leaves the other direction running (a half-close); anything
	// else ends the connection.
	if clean := <-ended; !clean {
		_ = client.Close()
		_ = upstream.Close()
	}
	<-ended
}

// pump copies src to dst, each chunk waiting while the proxy is cut: what is read during a cut
// is held and delivered after the heal. It returns true when src ended cleanly (EOF), after
// passing the end on to dst.
func (p *Proxy) pump(dst, src net.Conn) bool {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
				return false
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return false
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			if !p.gate() {
				return false
			}
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return true
		case err != nil:
			return false
		}
	}
}
