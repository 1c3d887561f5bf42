package realnode

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// HeadMemory says how much memory the first container of pod on c holds now and held at its
// peak (its cgroup v1, page cache included), or why it cannot tell.
func HeadMemory(c *localcluster.Cluster, pod *corev1.Pod) string {
	if len(pod.Status.ContainerStatuses) == 0 {
		return "no container yet"
	}
	pid, err := c.ContainerPID(pod.Status.ContainerStatuses[0].ContainerID)
	if err != nil {
		return err.Error()
	}
	dir, err := memoryCgroup(pid)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s now, %s peak (cgroup, page cache included)",
		mib(filepath.Join(dir, "memory.usage_in_bytes")), mib(filepath.Join(dir, "memory.max_usage_in_bytes")))
}

// mib reads a byte count from file as MiB.
func mib(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// memoryCgroup is the cgroup v1 memory directory of process pid.
func memoryCgroup(pid int) (string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) == 3 && parts[1] == "memory" {
			return filepath.Join("/sys/fs/cgroup/memory", parts[2]), nil
		}
	}
	return "", fmt.Errorf("process %d has no v1 memory cgroup", pid)
}
