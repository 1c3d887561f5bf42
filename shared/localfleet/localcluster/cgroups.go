package localcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// cgroupV1Root is where this machine mounts its cgroup v1 hierarchies.
const cgroupV1Root = "/sys/fs/cgroup"

// createCgroupRoot makes the cgroup name (e.g. "rayfleet-x") in every cgroup v1 hierarchy, so
// that each real Node's kubelet keeps its Pods under its own root instead of all sharing
// /kubepods. A fresh cpuset cgroup has no CPUs or memory nodes, so it gets its parent's.
func createCgroupRoot(name string) error {
	for _, h := range cgroupV1Hierarchies() {
		dir := filepath.Join(h, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		if filepath.Base(h) != "cpuset" {
			continue
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			v, err := os.ReadFile(filepath.Join(h, f))
			if err != nil {
				return fmt.Errorf("reading %s: %w", filepath.Join(h, f), err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
				return fmt.Errorf("writing %s: %w", filepath.Join(dir, f), err)
			}
		}
	}
	return nil
}

// removeCgroupRoot removes the cgroup name and everything the kubelet and runc made under it,
// deepest first (a cgroup directory can only be removed once it has no children or tasks), in
// the v2 "unified" mount too, where runc mirrors it.
func removeCgroupRoot(name string) {
	for _, h := range append(cgroupV1Hierarchies(), filepath.Join(cgroupV1Root, "unified")) {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, name), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		for _, d := range dirs {
			_ = os.Remove(d)
		}
	}
}

// cgroupV1Hierarchies are the mounted v1 hierarchies, the named name=systemd one included (the
// kubelet checks its root in every one); the v2 "unified" mount is left alone.
func cgroupV1Hierarchies() []string {
	entries, err := os.ReadDir(cgroupV1Root)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		dir := filepath.Join(cgroupV1Root, e.Name())
		if e.Name() == "unified" || !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err == nil {
			out = append(out, dir)
		}
	}
	return out
}
