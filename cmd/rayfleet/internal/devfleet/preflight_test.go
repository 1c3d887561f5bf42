package devfleet

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeClone returns a Config whose tools, agents and CRDs exist (as empty files) under a
// temporary directory, with a state directory of its own and free API server ports.
func fakeClone(t *testing.T) Config {
	t.Helper()
	root := t.TempDir()
	c := Config{
		StateDir: filepath.Join(root, "state"),
		K8sBin:   filepath.Join(root, "bin", "k8s"),
		Bin:      filepath.Join(root, "bin"),
		CLI:      filepath.Join(root, "bin", "rayfleet"),
		Root:     root,
		BasePort: freeBasePort(t),
	}
	files := []string{filepath.Join(c.Root, gatewayCRDDir, "gateway.networking.k8s.io_gateways.yaml")}
	for _, tool := range tools {
		files = append(files, filepath.Join(c.K8sBin, tool))
	}
	for _, a := range agents {
		files = append(files, filepath.Join(c.Bin, a))
	}
	for dir, names := range crdFiles {
		for _, n := range names {
			files = append(files, filepath.Join(c.Root, dir, n))
		}
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// freeBasePort finds a port after which the next two are free too; a moment later another
// process may take one, which no test here depends on.
func freeBasePort(t *testing.T) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if base+len(ClusterNames()) > 65535 {
			continue
		}
		// With the gateway's: the traffic cases need the port after the members' free too.
		if len(checkPorts(Config{BasePort: base, Traffic: true})) == 0 {
			return base
		}
	}
	t.Fatal("no four consecutive free ports")
	return 0
}

// listen holds 127.0.0.1:port until the test ends.
func listen(t *testing.T, port int) {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
}

func TestPreflight(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, c *Config)
		want  []string // substrings of the error; none: no error
		// wantNot are substrings the error must not hold.
		wantNot []string
	}{
		{name: "everything in place", setup: func(*testing.T, *Config) {}},
		{
			name:  "a tool missing",
			setup: func(t *testing.T, c *Config) { remove(t, filepath.Join(c.K8sBin, "kube-apiserver")) },
			want:  []string{"kube-apiserver not found in " + "%K8S%" + ": run `make tools`"},
		},
		{
			name: "kwok's stages and bin/spoke missing: both said",
			setup: func(t *testing.T, c *Config) {
				remove(t, filepath.Join(c.K8sBin, "kwok-stages.yaml"))
				remove(t, filepath.Join(c.Bin, "spoke"))
			},
			want: []string{"kwok-stages.yaml not found", "spoke not found in %BIN%: run `make build`"},
		},
		{
			name:  "no clone",
			setup: func(_ *testing.T, c *Config) { c.Root = "" },
			want:  []string{"run it inside one"},
		},
		{
			name: "a CRD missing",
			setup: func(t *testing.T, c *Config) {
				remove(t, filepath.Join(c.Root, spokeCRDDir, "fleet.rayfleet.io_clusterreports.yaml"))
			},
			want: []string{"fleet.rayfleet.io_clusterreports.yaml not found: run `make manifests`"},
		},
		{
			name:  "a member's port taken",
			setup: func(t *testing.T, c *Config) { listen(t, c.BasePort+1) },
			want:  []string{"127.0.0.1:%PORT1% (kube-apiserver of member us) is in use; stop what listens there or pass --base-port"},
		},
		{
			name:  "the hub's port taken",
			setup: func(t *testing.T, c *Config) { listen(t, c.BasePort) },
			want:  []string{"127.0.0.1:%PORT0% (kube-apiserver of the hub) is in use"},
		},
		{
			name:  "the gateway's port taken without traffic",
			setup: func(t *testing.T, c *Config) { listen(t, c.GatewayPort()) },
		},
		{
			name: "traffic with everything in place",
			setup: func(t *testing.T, c *Config) {
				c.Traffic = true
				touch(t, filepath.Join(c.K8sBin, "traefik"))
			},
		},
		{
			name:  "traffic without traefik",
			setup: func(_ *testing.T, c *Config) { c.Traffic = true },
			want:  []string{"traefik not found in %K8S%: run `make tools`"},
		},
		{
			name: "traffic with the gateway's port taken",
			setup: func(t *testing.T, c *Config) {
				c.Traffic = true
				touch(t, filepath.Join(c.K8sBin, "traefik"))
				listen(t, c.GatewayPort())
			},
			want: []string{"127.0.0.1:%PORT3% (the hub's Gateway) is in use; stop what listens there or pass --base-port"},
		},
		{
			name:  "real nodes without node tools or images",
			setup: func(_ *testing.T, c *Config) { c.RealNodes = true },
			want: []string{"node tools [kubelet kube-proxy containerd containerd-shim-runc-v2 ctr cni-plugins] not found in %K8S%: run `make node-tools`",
				"%BIN%/images/pause.tar: no such file or directory: run `make image`",
				"%BIN%/images/rayfleet.tar: no such file or directory: run `make image`"},
		},
		{
			name: "ray without node tools or images: the Ray image instead of RayFleet's",
			setup: func(t *testing.T, c *Config) {
				c.Ray, c.RealNodes, c.Traffic = true, true, true // as Resolve sets them
				touch(t, filepath.Join(c.K8sBin, "traefik"))
			},
			want: []string{"node tools [kubelet kube-proxy containerd containerd-shim-runc-v2 ctr cni-plugins] not found in %K8S%: run `make node-tools`",
				"%BIN%/images/pause.tar: no such file or directory: run `make image`",
				"%BIN%/images/ray.tar: no such file or directory: run `make ray-image`"},
			wantNot: []string{"rayfleet.tar"},
		},
		{
			name: "a fleet already running",
			setup: func(t *testing.T, c *Config) {
				l := Layout{Dir: c.StateDir}
				mkdir(t, l.PIDDir())
				if err := WriteRecord(l.SupervisorPIDFile(), RecordOf(os.Getpid(), self)); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"a dev fleet is already running (pid " + strconv.Itoa(os.Getpid()) + ", state in %STATE%); `rayfleet dev down` first"},
		},
		{
			name: "a dead fleet's pid file is no obstacle",
			setup: func(t *testing.T, c *Config) {
				l := Layout{Dir: c.StateDir}
				mkdir(t, l.PIDDir())
				if err := WriteRecord(l.SupervisorPIDFile(), Record{PID: os.Getpid(), Bin: "/nonexistent/rayfleet"}); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeClone(t)
			tt.setup(t, &c)
			err := Preflight(c)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Preflight: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Preflight passed, want an error")
			}
			r := strings.NewReplacer("%K8S%", c.K8sBin, "%BIN%", c.Bin, "%STATE%", c.StateDir,
				"%PORT0%", strconv.Itoa(c.BasePort), "%PORT1%", strconv.Itoa(c.BasePort+1), "%PORT3%", strconv.Itoa(c.BasePort+3))
			for _, w := range tt.want {
				if w = r.Replace(w); !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q contains %q", err, w)
				}
			}
		})
	}
}

func TestResolveFindsTheCloneAndDefaults(t *testing.T) {
	c := fakeClone(t)
	t.Chdir(filepath.Join(c.Root, hubCRDDir))
	t.Setenv("RAYFLEET_K8S_BIN", "")
	t.Setenv("XDG_STATE_HOME", filepath.Join(c.Root, "xdg"))
	got, err := Resolve(Config{CLI: c.CLI})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		StateDir: filepath.Join(c.Root, "xdg", "rayfleet", "dev"),
		BasePort: DefaultBasePort,
		K8sBin:   c.K8sBin,
		Bin:      c.Bin,
		CLI:      c.CLI,
		Root:     c.Root,
	}
	if got != want {
		t.Errorf("Resolve = %+v, want %+v", got, want)
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o755); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}
