package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a process gets to exit after SIGTERM before it is killed.
const stopGrace = 10 * time.Second

// clockTicksPerSecond is USER_HZ, the unit of utime/stime in /proc/<pid>/stat. It is 100 on
// every Linux architecture Go supports (it is fixed by the kernel ABI, not by CONFIG_HZ).
const clockTicksPerSecond = 100

// Process is a child process with its output in a log file.
type Process struct {
	// Name identifies the process in logs and errors.
	Name string
	// LogPath receives the process's stdout and stderr.
	LogPath string
	// Bin is the path of the program it runs.
	Bin string

	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	mu      sync.Mutex
	waitErr error
}

// Usage is what a process has consumed so far.
type Usage struct {
	// PeakRSSBytes is the high-water mark of the resident set (VmHWM).
	PeakRSSBytes int64
	// CPU is user plus system CPU time.
	CPU time.Duration
}

// startProcess runs bin with args and env (added to the current environment), writing its
// output to <dir>/<name>.log. The child is killed if this process dies, so a crashed test
// leaves no stray API servers behind.
func startProcess(dir, name, bin string, args, env []string) (*Process, error) {
	return startProcessLogging(filepath.Join(dir, name+".log"), name, bin, args, env)
}

// startProcessLogging is startProcess with the log file's path given.
func startProcessLogging(logPath, name, bin string, args, env []string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening log for %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &Process{Name: name, LogPath: logPath, Bin: bin, cmd: cmd, logFile: logFile, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Stop sends SIGTERM, waits up to stopGrace, then kills the process group. It is safe to call
// more than once and on a process that already exited.
func (p *Process) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		<-p.done
	}
}

// Kill kills the process group with SIGKILL, as a crash or an out-of-memory kill would end it:
// no graceful shutdown, no Lease released, no defer run. It waits for the exit and is safe to
// call on a process that already exited.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	<-p.done
}

// Usage reads the live process's peak RSS and CPU time from /proc; after exit it falls back to
// the rusage the kernel reported to Wait.
func (p *Process) Usage() (Usage, error) {
	if exited, _ := p.Exited(); exited {
		ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
		if !ok {
			return Usage{}, fmt.Errorf("%s: no rusage after exit", p.Name)
		}
		return Usage{
			PeakRSSBytes: ru.Maxrss * 1024,
			CPU:          time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		}, nil
	}
	return ReadUsage(p.PID())
}

// ReadUsage reads VmHWM from /proc/<pid>/status and utime+stime from /proc/<pid>/stat.
func ReadUsage(pid int) (Usage, error) {
	var u Usage
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, fmt.Errorf("reading status of pid %d: %w", pid, err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, parseErr := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if parseErr != nil {
				return u, fmt.Errorf("parsing VmHWM %q of pid %d: %w", rest, pid, parseErr)
			}
			u.PeakRSSBytes = kb * 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, fmt.Errorf("reading stat of pid %d: %w", pid, err)
	}
	// The command name (field 2) may contain spaces and parentheses; fields resume after the
	// last ')'. utime and stime are fields 14 and 15, i.e. 11 and 12 after the state field.
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return u, fmt.Errorf("malformed stat of pid %d", pid)
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 13 {
		return u, fmt.Errorf("short stat of pid %d", pid)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return u, fmt.Errorf("parsing CPU ticks %q of pid %d: %w", f, pid, err)
		}
		ticks += n
	}
	u.CPU = time.Duration(ticks) * time.Second / clockTicksPerSecond
	return u, nil
}

// Ports FreePort picks from: below Linux's default ephemeral range (32768-60999). A port the
// kernel hands out for ":0" is an ephemeral one, which any outgoing connection on the machine
// may take as its source port before the process meant to listen on it binds it; with several
// fleets starting at once, a control plane then failed with "address already in use".
const (
	portRangeLow   = 20000
	portRangeCount = 12000
	portTries      = 200
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, picked at random below
// the ephemeral range.
func FreePort() (int, error) {
	for range portTries {
		port := portRangeLow + rand.IntN(portRangeCount) //nolint:gosec // a port number, not a secret
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken: try another
		}
		if err := l.Close(); err != nil {
			return 0, fmt.Errorf("releasing port %d: %w", port, err)
		}
		return port, nil
	}
	return 0, errors.New("finding a free port: every one tried is taken")
}

// freePorts returns n distinct free ports.
func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	ports := make([]int, 0, n)
	for len(ports) < n {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
