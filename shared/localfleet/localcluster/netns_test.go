package localcluster

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// TestExposeReachesAListenerInTheNamespace checks both directions the traffic namespace of
// `rayfleet dev up --ray` uses: a listener made with Listen on an address only the namespace
// has, and Expose bringing a namespace port out to the host's loopback.
func TestExposeReachesAListenerInTheNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip (iproute2)")
	}
	ns, err := CreateNetNS(fmt.Sprintf("rf-test-%d", os.Getpid()), netip.MustParsePrefix("10.200.250.1/24"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Delete() })
	serveIP := netip.MustParseAddr("10.99.250.1")
	if err = ns.AddAddress(serveIP); err != nil {
		t.Fatal(err)
	}
	if _, err = net.Listen("tcp", serveIP.String()+":0"); err == nil {
		t.Fatal("the serve IP is bindable on the host; the test cannot tell the namespaces apart")
	}
	inner, err := ns.Listen(serveIP.String() + ":0")
	if err != nil {
		t.Fatalf("listening in the namespace: %v", err)
	}
	defer inner.Close()
	go func() {
		for {
			c, acceptErr := inner.Accept()
			if acceptErr != nil {
				return
			}
			_, _ = io.WriteString(c, "from the namespace")
			_ = c.Close()
		}
	}()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	hostAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	exposed, err := ns.Expose(hostAddr, inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer exposed.Close()
	c, err := net.Dial("tcp", hostAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "from the namespace" {
		t.Fatalf("read %q, %v through the exposed port; want the namespace's listener's answer", got, err)
	}
}
