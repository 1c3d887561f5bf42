// Package conditions owns the metav1.Condition vocabulary the hub and the spoke share: the API
// server's limit on a condition message and the UTF-8-safe truncation that keeps a status
// write under it, setting a condition, mirroring one object's condition onto another, and
// summarizing several conditions into one. It imports only apimachinery and the standard
// library, so that every package on either side can use it.
package conditions

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxMessageLength is the API server's limit, in bytes, on metav1.Condition.message; one
// longer message makes the whole status write fail.
const MaxMessageLength = 32768

// Truncate cuts msg to at most MaxMessageLength bytes. The cut moves back to the start of the
// character the limit falls in, so a multi-byte character is dropped whole rather than left
// half-written (the API server would store the torn bytes as U+FFFD).
func Truncate(msg string) string { return TruncateTo(msg, MaxMessageLength) }

// TruncateTo cuts msg to at most limit bytes as Truncate does, for fields with a smaller
// limit than a condition message.
func TruncateTo(msg string, limit int) string {
	if len(msg) <= limit {
		return msg
	}
	// msg[cut] is the first byte left out. A character spans at most utf8.UTFMax bytes, so its
	// start is at most utf8.UTFMax-1 bytes back; in invalid UTF-8 there may be none, and the
	// plain byte cut is as good as any.
	cut := max(limit, 0)
	for back := 0; back < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(msg[cut]); back++ {
		cut--
	}
	if !utf8.RuneStart(msg[cut]) {
		cut = max(limit, 0)
	}
	return msg[:cut]
}

// Join joins head and parts with "; " into a message that fits MaxMessageLength: the parts
// that would take it past the limit are left out, and a closing "; and N more" says how many.
// Parts are kept in order, so equal input gives an equal message.
func Join(head string, parts ...string) string {
	var b strings.Builder
	b.WriteString(head)
	for i, p := range parts {
		// Writing p must leave room to say how many of the parts after it are left out.
		need := b.Len() + len("; ") + len(p)
		if rest := len(parts) - i - 1; rest > 0 {
			need += len(andMore(rest))
		}
		if need > MaxMessageLength {
			b.WriteString(andMore(len(parts) - i))
			break
		}
		b.WriteString("; ")
		b.WriteString(p)
	}
	// Only an overlong head is still too long here.
	return Truncate(b.String())
}

// andMore is Join's note of how many parts it left out.
func andMore(n int) string {
	return fmt.Sprintf("; and %d more", n)
}

// Set sets c in conds with meta.SetStatusCondition, its message truncated to what the API
// server accepts, and reports whether conds changed. As with meta.SetStatusCondition, c's
// LastTransitionTime is kept only when its status changes; the caller stamps it and
// ObservedGeneration.
func Set(conds *[]metav1.Condition, c metav1.Condition) bool {
	c.Message = Truncate(c.Message)
	return meta.SetStatusCondition(conds, c)
}

// Mirror copies the condition of type from in src onto dst as type to, keeping its status,
// reason and message, and stamps it with the target's generation. The transition is stamped
// now, when dst's condition changes status, as for a condition the target computes itself.
// to is the new type, such as from with a prefix naming the source ("<cluster>Ready"). It
// reports whether dst changed; when src has no condition of type from, dst is left as it is.
func Mirror(dst *[]metav1.Condition, src []metav1.Condition, from, to string, generation int64, now metav1.Time) bool {
	c := meta.FindStatusCondition(src, from)
	if c == nil {
		return false
	}
	return Set(dst, metav1.Condition{
		Type:               to,
		Status:             c.Status,
		Reason:             c.Reason,
		Message:            c.Message,
		ObservedGeneration: generation,
		LastTransitionTime: now,
	})
}
