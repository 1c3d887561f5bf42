// Package names builds the names of objects the hub and the spoke both need to agree on, kept
// within Kubernetes' 63-character limit for DNS labels.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxLabel is the longest DNS label, the limit of Service names.
const maxLabel = 63

// hashLen is how many hex digits of a hash a shortened name keeps.
const hashLen = 10

// Bounded joins parts with "-" and, when that exceeds 63 characters, keeps a readable prefix
// and appends a hash of the whole so that distinct inputs keep distinct names.
func Bounded(parts ...string) string {
	full := strings.Join(parts, "-")
	if len(full) <= maxLabel {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	prefix := strings.TrimRight(full[:maxLabel-hashLen-1], "-.")
	return prefix + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// ServeExport is the name under which a member exports the serve Service of its copy of a
// RayService for the Multi-Cluster Services API: "<rayservice>-serve-<member>-<hash>".
// Exports of the same name merge across clusters, so the name carries the member, and the
// hub's route can weigh each member's ServiceImport on its own; Distinct keeps RayService
// "x-serve" on member "y" apart from RayService "x" on member "serve-y".
func ServeExport(rayService, member string) string {
	return Distinct(rayService, "serve", member)
}

// LegacyServeExport is the name spokes and hubs before ServeExport's hash used, which two
// RayServices of one namespace may share. Spokes export under both names and hubs route to
// it while the traffic cluster has no ServiceImport of the new name; both drop it once no
// supported spoke or hub predates ServeExport's hash (the release after the one adding it).
func LegacyServeExport(rayService, member string) string {
	return Bounded(rayService, "serve", member)
}

// Distinct names what parts name together, unambiguously: the parts joined with "-" (kept
// readable, shortened to fit) and a hash of the parts joined with "/", which no Kubernetes name
// holds. Bounded("team-a", "x") and Bounded("team", "a-x") are one name; Distinct's are two.
func Distinct(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "/")))
	suffix := "-" + hex.EncodeToString(sum[:])[:hashLen]
	readable := strings.Join(parts, "-")
	if len(readable)+len(suffix) > maxLabel {
		readable = strings.TrimRight(readable[:maxLabel-len(suffix)], "-.")
	}
	return readable + suffix
}
