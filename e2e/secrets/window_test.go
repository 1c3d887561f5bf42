//go:build e2e

package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

func TestBase64Window(t *testing.T) {
	tests := []struct {
		name        string
		whole, part string
	}{
		{name: "part on a 3-byte boundary", whole: "abcSECRETVALUE-1234xyz", part: "SECRETVALUE-1234"},
		{name: "part one byte after a boundary", whole: "abcdSECRETVALUE-1234xyz", part: "SECRETVALUE-1234"},
		{name: "part two bytes after a boundary", whole: "abcdeSECRETVALUE-1234xyz", part: "SECRETVALUE-1234"},
		{name: "part at the end", whole: "apiVersion: v1\ntoken: SECRETVALUE-1234", part: "SECRETVALUE-1234"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := base64Window([]byte(tt.whole), []byte(tt.part))
			if len(w) < minNeedle {
				t.Fatalf("window %q is shorter than %d", w, minNeedle)
			}
			if enc := base64.StdEncoding.EncodeToString([]byte(tt.whole)); !strings.Contains(enc, w) {
				t.Errorf("window %q is not in the encoding %q", w, enc)
			}
			// The window encodes bytes of part only: it decodes to a piece of part.
			dec, err := base64.StdEncoding.DecodeString(w)
			if err != nil || !strings.Contains(tt.part, string(dec)) {
				t.Errorf("window %q decodes to %q (%v), not a piece of %q", w, dec, err, tt.part)
			}
		})
	}
	if w := base64Window([]byte("no secret here"), []byte("SECRETVALUE")); w != "" {
		t.Errorf("window of a missing part = %q, want none", w)
	}
}

func TestContains(t *testing.T) {
	token := strings.Repeat("0123456789", 10)
	secrets := []secret{{name: "token", value: token}, {name: "short", value: "abc"}}
	tests := []struct {
		name string
		text string
		want string
	}{
		{name: "the whole value", text: "Response Body: " + token, want: "token"},
		{name: "a body cut after the start of the value", text: `{"data":{"token":"` + token[:30], want: "token"},
		{name: "only the end of the value", text: "…" + token[70:], want: "token"},
		{name: "a protobuf body, hex-dumped", text: `Request Body {"body": "` +
			strings.ReplaceAll(hex.Dump([]byte("\x0a\x06Secret"+token+"\x12")), "\n", `\n`) + `"}`, want: "token"},
		{name: "a hex dump without it", text: strings.ReplaceAll(hex.Dump([]byte("k8s\x00events.k8s.io/v1 Event")), "\n", `\n`)},
		{name: "values too short to search for are not", text: "abc abc abc"},
		{name: "nothing", text: "Reconciling RayService"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(contains(tt.text, secrets), ","); got != tt.want {
				t.Errorf("contains = %q, want %q", got, tt.want)
			}
		})
	}
}
