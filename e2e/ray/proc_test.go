//go:build e2e

package ray

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat; 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// descendants lists the processes below pid, found by their parent pids in /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := statField(p, 1); ok {
			children[int(ppid)] = append(children[int(ppid)], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// statField is field i (0 = state) of /proc/<pid>/stat after the command name, as an integer.
func statField(pid, i int) (int64, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// The command name is in parentheses and may hold spaces; the fields follow the last ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if i >= len(fields) {
		return 0, false
	}
	v, err := strconv.ParseInt(fields[i], 10, 64)
	return v, err == nil
}

// memory is the summed resident (RSS) and proportional (PSS: shared pages split among the
// processes sharing them) memory of the head's processes, in bytes. RSS counts the Python
// libraries its dozen processes share once per process; PSS is what the head really takes.
func (h *head) memory() (rss, pss int64) {
	for _, pid := range descendants(os.Getpid()) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			name, value, ok := strings.Cut(line, ":")
			if !ok || (name != "Rss" && name != "Pss") {
				continue
			}
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
			if err != nil {
				continue
			}
			if name == "Rss" {
				rss += kb << 10
			} else {
				pss += kb << 10
			}
		}
	}
	return rss, pss
}

// cpuTicks is the CPU time (user and system) of the head's processes so far, in clock ticks.
func (h *head) cpuTicks() int64 {
	var total int64
	for _, pid := range descendants(os.Getpid()) {
		// utime and stime are fields 14 and 15 of stat, 11 and 12 after the command name.
		u, ok1 := statField(pid, 11)
		s, ok2 := statField(pid, 12)
		if ok1 && ok2 {
			total += u + s
		}
	}
	return total
}

// idleCPU is the head's CPU use over window while nothing calls it, in percent of one core.
// Processes that exit within the window are not counted.
func (h *head) idleCPU(window time.Duration) float64 {
	before := h.cpuTicks()
	<-time.After(window) // a measurement window, not a wait for a condition
	used := h.cpuTicks() - before
	return float64(used) / clockTicks / window.Seconds() * 100
}
