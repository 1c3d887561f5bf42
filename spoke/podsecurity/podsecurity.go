// Package podsecurity checks the Pods the spoke is about to create against a Pod Security
// Standards level with the upstream evaluator (k8s.io/pod-security-admission), the code the API
// server's Pod Security admission runs, so the spoke and the admission never disagree about a
// Pod. It makes no API calls.
// A leaf: it imports no other RayFleet package, so never hub/ or shared/testing.
package podsecurity

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// Levels a member may choose. Privileged checks nothing.
const (
	LevelPrivileged = string(psaapi.LevelPrivileged)
	LevelBaseline   = string(psaapi.LevelBaseline)
	LevelRestricted = string(psaapi.LevelRestricted)
)

// DefaultLevel is the level the spoke enforces unless configured otherwise.
const DefaultLevel = LevelBaseline

// Checker evaluates Pods at one level, at the newest version of the standards the library
// knows (the version the API server of the same release enforces for "latest"). A nil Checker
// allows every Pod.
type Checker struct {
	level     psaapi.LevelVersion
	evaluator policy.Evaluator
}

// New returns a Checker for level ("privileged", "baseline" or "restricted").
func New(level string) (*Checker, error) {
	lvl, err := psaapi.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("pod security level %q: %w", level, err)
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("build the pod security evaluator: %w", err)
	}
	return &Checker{level: psaapi.LevelVersion{Level: lvl, Version: psaapi.LatestVersion()}, evaluator: evaluator}, nil
}

// Default returns a Checker for DefaultLevel.
func Default() *Checker {
	c, err := New(DefaultLevel)
	if err != nil {
		// The default level and the library's own checks always make a valid evaluator.
		panic(err)
	}
	return c
}

// Level returns the level checked, "privileged" for a nil Checker.
func (c *Checker) Level() string {
	if c == nil {
		return LevelPrivileged
	}
	return string(c.level.Level)
}

// Failure is one check a Pod fails: the check as Pod Security admission names it ("privileged",
// "hostPath volumes") and the containers, volumes or fields at fault.
type Failure struct {
	Check  string
	Detail string
}

// String renders f as the API server words it: `check (detail)`.
func (f Failure) String() string {
	if f.Detail == "" {
		return f.Check
	}
	return f.Check + " (" + f.Detail + ")"
}

// Violation is what a Pod fails at a level; no Failures means it is allowed.
type Violation struct {
	Level    string
	Failures []Failure
}

// Forbidden reports whether the Pod fails any check.
func (v Violation) Forbidden() bool { return len(v.Failures) > 0 }

// String words v like the API server's refusal, naming every failed check and field.
func (v Violation) String() string {
	if !v.Forbidden() {
		return ""
	}
	parts := make([]string, len(v.Failures))
	for i, f := range v.Failures {
		parts[i] = f.String()
	}
	return fmt.Sprintf("violates PodSecurity %q: %s", v.Level, strings.Join(parts, ", "))
}

// Check evaluates pod's metadata and spec, as admission does for a Pod create.
func (c *Checker) Check(pod *corev1.Pod) Violation {
	if c == nil {
		return Violation{Level: LevelPrivileged}
	}
	v := Violation{Level: string(c.level.Level)}
	for _, r := range c.evaluator.EvaluatePod(c.level, &pod.ObjectMeta, &pod.Spec) {
		if r.Allowed {
			continue
		}
		reason := r.ForbiddenReason
		if reason == "" {
			reason = policy.UnknownForbiddenReason
		}
		v.Failures = append(v.Failures, Failure{Check: reason, Detail: r.ForbiddenDetail})
	}
	return v
}
