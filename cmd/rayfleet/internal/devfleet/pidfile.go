package devfleet

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Record is what a pid file holds, one value per line: the pid first (so that
// `kill $(head -1 x.pid)` works), then the program's path and the process's start time. The
// last two tell a process of ours from one that got the same pid after ours exited, so that
// `dev down` never signals a stranger.
type Record struct {
	// PID is the process id.
	PID int
	// Bin is the path of the program the process runs.
	Bin string
	// StartTicks is the process's start time in clock ticks after boot (/proc/<pid>/stat
	// field 22); 0 when it could not be read.
	StartTicks uint64
}

// RecordOf describes the live process pid running bin.
func RecordOf(pid int, bin string) Record {
	r := Record{PID: pid, Bin: bin}
	if st, err := readStat(pid); err == nil {
		r.StartTicks = st.startTicks
	}
	return r
}

// String is the pid file's content.
func (r Record) String() string {
	return fmt.Sprintf("%d\n%s\n%d\n", r.PID, r.Bin, r.StartTicks)
}

// ParseRecord parses a pid file's content.
func ParseRecord(data string) (Record, error) {
	lines := strings.Split(strings.TrimRight(data, "\n"), "\n")
	if len(lines) != 3 {
		return Record{}, fmt.Errorf("want 3 lines (pid, program, start time), got %d", len(lines))
	}
	pid, err := strconv.Atoi(lines[0])
	if err != nil || pid <= 0 {
		return Record{}, fmt.Errorf("bad pid %q", lines[0])
	}
	ticks, err := strconv.ParseUint(lines[2], 10, 64)
	if err != nil {
		return Record{}, fmt.Errorf("bad start time %q", lines[2])
	}
	if lines[1] == "" {
		return Record{}, errors.New("no program path")
	}
	return Record{PID: pid, Bin: lines[1], StartTicks: ticks}, nil
}

// WriteRecord writes a pid file.
func WriteRecord(path string, r Record) error {
	if err := os.WriteFile(path, []byte(r.String()), 0o600); err != nil {
		return fmt.Errorf("writing pid file %s: %w", path, err)
	}
	return nil
}

// ReadRecord reads a pid file; the error wraps fs.ErrNotExist when there is none.
func ReadRecord(path string) (Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Record{}, fmt.Errorf("reading pid file %s: %w", path, err)
	}
	r, err := ParseRecord(string(data))
	if err != nil {
		return Record{}, fmt.Errorf("pid file %s: %w", path, err)
	}
	return r, nil
}

// Alive reports whether the recorded process still runs: the pid exists and is not a zombie,
// started when the record says, and runs the recorded program. A pid reused by another
// process fails the last two checks.
func (r Record) Alive() bool {
	st, err := readStat(r.PID)
	if err != nil || st.state == 'Z' || st.state == 'X' {
		return false
	}
	if r.StartTicks != 0 && st.startTicks != r.StartTicks {
		return false
	}
	return runs(r.PID, r.Bin)
}

// Signal sends sig to the recorded process if it is still the recorded one.
func (r Record) Signal(sig syscall.Signal) error {
	if !r.Alive() {
		return nil
	}
	if err := syscall.Kill(r.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling pid %d (%s): %w", r.PID, r.Bin, err)
	}
	return nil
}

// runs reports whether process pid runs bin: /proc/<pid>/exe (symlinks resolved, and " (deleted)"
// when `make build` replaced the binary since) or, failing that, the first word of its command
// line is bin.
func runs(pid int, bin string) bool {
	want := []string{bin}
	if resolved, err := filepath.EvalSymlinks(bin); err == nil {
		want = append(want, resolved)
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		if slices.Contains(want, strings.TrimSuffix(exe, " (deleted)")) {
			return true
		}
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return slices.Contains(want, string(argv0))
}

// procStat is what Alive needs from /proc/<pid>/stat.
type procStat struct {
	state      byte
	startTicks uint64
}

// readStat reads the state (field 3) and start time (field 22) of a process.
func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, fmt.Errorf("reading stat of pid %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces and parentheses; fields resume after the last
	// ')'. Field 3 is then the first, field 22 the twentieth.
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return procStat{}, fmt.Errorf("malformed stat of pid %d", pid)
	}
	fields := strings.Fields(string(data[end+1:]))
	if len(fields) < 20 || len(fields[0]) != 1 {
		return procStat{}, fmt.Errorf("short stat of pid %d", pid)
	}
	ticks, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("parsing start time of pid %d: %w", pid, err)
	}
	return procStat{state: fields[0][0], startTicks: ticks}, nil
}

// namedRecord is a pid file's record and the name it is shown by (the file name without .pid).
type namedRecord struct {
	name string
	Record
}

// readRecords reads every pid file of l, sorted by name; unreadable files are skipped (a
// half-written one belongs to a process that started a moment ago and is caught by its
// supervisor). A missing pid directory is no pid files.
func readRecords(l Layout) ([]namedRecord, error) {
	files, err := filepath.Glob(filepath.Join(l.PIDDir(), "*.pid"))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", l.PIDDir(), err)
	}
	slices.Sort(files)
	var out []namedRecord
	for _, f := range files {
		r, err := ReadRecord(f)
		if err != nil {
			continue
		}
		out = append(out, namedRecord{name: strings.TrimSuffix(filepath.Base(f), ".pid"), Record: r})
	}
	return out, nil
}
