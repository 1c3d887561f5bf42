package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestCPPhase(t *testing.T) {
	s := time.Second
	r := simRun{
		cpFrom: [numPhases]cpUsage{
			{10 * s, 1 * s, 5 * s, 1 * s},
			{45 * s, 4 * s, 20 * s, 3 * s},
		},
		cp: [numPhases]cpUsage{
			{40 * s, 4 * s, 20 * s, 3 * s},
			{50 * s, 5 * s, 30 * s, 4 * s},
		},
	}
	tests := []struct {
		name  string
		phase int
		want  cpUsage
	}{
		{name: "placement counts from just before the first create", phase: phasePlace, want: cpUsage{30 * s, 3 * s, 15 * s, 2 * s}},
		{name: "a later phase counts from its own start, not the previous one's end", phase: phaseStatus, want: cpUsage{5 * s, 1 * s, 10 * s, 1 * s}},
		{name: "a phase that did not end has none", phase: phaseSteady, want: cpUsage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.cpPhase(tt.phase); got != tt.want {
				t.Errorf("cpPhase(%d) = %v, want %v", tt.phase, got, tt.want)
			}
		})
	}
	if got, want := r.cpPhase(phasePlace).total(), 50*s; got != want {
		t.Errorf("placement total = %v, want %v", got, want)
	}
}

func TestMachineFloor(t *testing.T) {
	cp := cpUsage{200 * time.Second, 20 * time.Second, 70 * time.Second, 10 * time.Second}
	tests := []struct {
		cores int
		want  time.Duration
	}{
		{cores: 2, want: 150 * time.Second},
		{cores: 1, want: 300 * time.Second},
		{cores: 0, want: 300 * time.Second}, // never a division by zero
	}
	for _, tt := range tests {
		if got := machineFloor(cp, tt.cores); got != tt.want {
			t.Errorf("machineFloor on %d cores = %v, want %v", tt.cores, got, tt.want)
		}
	}
}

func TestCPFiguresInReport(t *testing.T) {
	run := func(api time.Duration) simRun {
		return simRun{cp: [numPhases]cpUsage{{api, 2 * time.Second, 4 * time.Second, time.Second}}}
	}
	runs := []simRun{run(30 * time.Second), run(10 * time.Second), run(20 * time.Second)}
	var out bytes.Buffer
	printFigures(&out, cpFigures([]int{phasePlace}), runs)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	// Header, the placement total, its four processes, the machine floor.
	if len(lines) != 7 {
		t.Fatalf("%d lines, want 7:\n%s", len(lines), out.String())
	}
	for _, want := range []string{
		"control-plane CPU, placement (s)\t37.0\t17.0\t27.0\t17.0 / 27.0 / 37.0",
		"  hub kube-apiserver (s)\t30.0\t10.0\t20.0\t10.0 / 20.0 / 30.0",
		"  member etcd (s)\t1.0\t1.0\t1.0\t1.0 / 1.0 / 1.0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "machine floor, placement: control-plane CPU / ") {
		t.Errorf("last line %q is not the machine floor", last)
	}
}

func TestSpread(t *testing.T) {
	tests := []struct {
		name        string
		in          []float64
		lo, med, hi float64
	}{
		{name: "none", in: nil},
		{name: "one", in: []float64{4}, lo: 4, med: 4, hi: 4},
		{name: "odd count, unsorted", in: []float64{9, 1, 5}, lo: 1, med: 5, hi: 9},
		{name: "even count takes the lower middle", in: []float64{8, 2, 6, 4}, lo: 2, med: 4, hi: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, med, hi := spread(tt.in)
			if lo != tt.lo || med != tt.med || hi != tt.hi {
				t.Errorf("spread(%v) = %v / %v / %v, want %v / %v / %v", tt.in, lo, med, hi, tt.lo, tt.med, tt.hi)
			}
		})
	}
}
