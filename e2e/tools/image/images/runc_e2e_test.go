//go:build e2e

package images

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/onsi/gomega"

	"github.com/rayfleet/rayfleet/shared/localfleet"
)

// These tests run the images as a Node would, under runc, from the real binaries (make build):
// the image's user, working directory and environment, a read-only root filesystem, and the
// image's own PID namespace. They need root and runc (Debian's runc package), and skip without.

// TestRayfleetRunsUnderRunc starts each binary of the rayfleet image as 65532 and checks that
// the default command prints what bin/rayfleet version prints.
func TestRayfleetRunsUnderRunc(t *testing.T) {
	runc := needRunc(t)
	bin := localfleet.DefaultRayFleetBin()
	img, err := Rayfleet(Build{}, filepath.Join(bin, "hub"), filepath.Join(bin, "spoke"), filepath.Join(bin, "rayfleet"), nil)
	if err != nil {
		t.Fatalf("%v (run make build first)", err)
	}
	want, err := exec.Command(filepath.Join(bin, "rayfleet"), "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string // nil: the image's default command
		wantStdout string
	}{
		{name: "default command", wantStdout: string(want)},
		{name: "hub starts", args: []string{"/hub", "--help"}},
		{name: "spoke starts", args: []string{"/spoke", "--help"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bundle := unpack(t, runc, img, tt.args)
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(runc, "run", "--bundle", bundle, containerID(t))
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("runc run %q: %v\nstdout:\n%s\nstderr:\n%s", tt.args, err, stdout.String(), stderr.String())
			}
			if tt.wantStdout != "" && stdout.String() != tt.wantStdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.wantStdout)
			}
		})
	}
}

// TestPauseRunsUnderRunc starts the pause image as PID 1 of its container and stops it with
// SIGTERM, as a kubelet stops a sandbox: it must exit 0, and not warn that it is not PID 1.
func TestPauseRunsUnderRunc(t *testing.T) {
	runc := needRunc(t)
	pause := filepath.Join(t.TempDir(), "pause")
	build := exec.Command("go", "build", "-trimpath", "-o", pause, "../../pause")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build pause: %v\n%s", err, out)
	}
	img, err := Pause(Build{}, pause)
	if err != nil {
		t.Fatal(err)
	}
	bundle := unpack(t, runc, img, nil)
	id := containerID(t)
	var stderr bytes.Buffer
	cmd := exec.Command(runc, "run", "--bundle", bundle, id)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// A signal before the container is running kills runc's init instead of pause, and SIGTERM to
	// a PID 1 without a handler is dropped: it is sent, once running, until pause exits.
	var runErr error
	gomega.NewWithT(t).Eventually(func() bool {
		if containerStatus(runc, id) == "running" {
			_ = exec.Command(runc, "kill", id, "TERM").Run()
		}
		select {
		case runErr = <-exited:
			return true
		default:
			return false
		}
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(gomega.BeTrue())
	if runErr != nil {
		t.Fatalf("pause after SIGTERM: %v\n%s", runErr, stderr.String())
	}
	if got := stderr.String(); !strings.Contains(got, "got signal: terminated") || strings.Contains(got, "Warning") {
		t.Errorf("pause's stderr %q: want the shutdown line and no warning about not being PID 1", got)
	}
}

// containerStatus is runc's status of container id (creating, created, running, stopped), or
// empty while runc does not know it yet.
func containerStatus(runc, id string) string {
	out, err := exec.Command(runc, "state", id).Output()
	if err != nil {
		return ""
	}
	var state struct{ Status string }
	if json.Unmarshal(out, &state) != nil {
		return ""
	}
	return state.Status
}

func needRunc(t *testing.T) string {
	t.Helper()
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Skip("runc is not installed (Debian: apt-get install runc)")
	}
	if os.Geteuid() != 0 {
		t.Skip("running a container under runc needs root")
	}
	return runc
}

func containerID(t *testing.T) string {
	id := fmt.Sprintf("rayfleet-image-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { _ = exec.Command("runc", "delete", "--force", id).Run() })
	return id
}

// unpack writes a runc bundle for img: its filesystem as the read-only rootfs and runc's default
// spec with the image config's user, working directory, environment and command (args, when
// given, replace the command).
func unpack(t *testing.T, runc string, img v1.Image, args []string) string {
	t.Helper()
	bundle := t.TempDir()
	if err := extract(img, filepath.Join(bundle, "rootfs")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(runc, "spec", "--bundle", bundle).CombinedOutput(); err != nil {
		t.Fatalf("runc spec: %v\n%s", err, out)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if args == nil {
		args = append(append([]string{}, cf.Config.Entrypoint...), cf.Config.Cmd...)
	}
	uid, gid, err := parseUser(cf.Config.User)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(bundle, "config.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	process := spec["process"].(map[string]any)
	process["terminal"] = false
	process["args"] = args
	process["env"] = cf.Config.Env
	process["user"] = map[string]any{"uid": uid, "gid": gid}
	if cf.Config.WorkingDir != "" {
		process["cwd"] = cf.Config.WorkingDir
	}
	spec["root"] = map[string]any{"path": "rootfs", "readonly": true}
	if raw, err = json.Marshal(spec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return bundle
}

func parseUser(s string) (uid, gid int, err error) {
	u, g, ok := strings.Cut(s, ":")
	if uid, err = strconv.Atoi(u); err != nil || !ok {
		return 0, 0, fmt.Errorf("image user %q: want uid:gid", s)
	}
	if gid, err = strconv.Atoi(g); err != nil {
		return 0, 0, fmt.Errorf("image user %q: want uid:gid", s)
	}
	return uid, gid, nil
}

// extract writes img's filesystem under dir with the image's modes and owners (which is why the
// tests need root).
func extract(img v1.Image, dir string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.Clean("/"+hdr.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o700)
		case tar.TypeReg:
			err = writeFile(p, tr)
		default:
			err = fmt.Errorf("%s: unexpected tar type %q", hdr.Name, hdr.Typeflag)
		}
		if err == nil {
			err = os.Lchown(p, hdr.Uid, hdr.Gid)
		}
		if err == nil {
			// After chown, which clears set-id bits; Chmod maps the sticky bit from FileMode.
			err = os.Chmod(p, hdr.FileInfo().Mode())
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(p string, r io.Reader) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
