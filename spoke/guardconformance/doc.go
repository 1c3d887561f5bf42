// Package guardconformance holds the test that keeps the member's guard (shared/hubpolicy) and
// Pod Security admission in agreement: for a corpus of RayServices it builds the Pods the spoke
// would build (spoke/builder), runs the upstream k8s.io/pod-security-admission checks on them
// and the guard, installed on a real API server, on the RayServices, and fails where they
// disagree. It has no code of its own: it sits in spoke/ because shared/ may not import the
// spoke's builder.
package guardconformance
