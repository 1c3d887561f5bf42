package images

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeELF writes a minimal 64-bit ELF executable for machine m (little-endian), with a PT_INTERP
// program header when dynamic, and body appended so that files differ in size and content. The
// image builder only reads headers, so this stands in for a real binary without building one.
func fakeELF(t *testing.T, dir, name string, m elf.Machine, dynamic bool, body string) string {
	t.Helper()
	var buf bytes.Buffer
	phnum := uint16(1)
	if dynamic {
		phnum = 2
	}
	hdr := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(m),
		Version:   uint32(elf.EV_CURRENT),
		Phoff:     64,
		Ehsize:    64,
		Phentsize: 56,
		Phnum:     phnum,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	progs := []elf.Prog64{{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X)}}
	if dynamic {
		progs = append(progs, elf.Prog64{Type: uint32(elf.PT_INTERP), Flags: uint32(elf.PF_R)})
	}
	for _, v := range []any{hdr, progs} {
		if err := binary.Write(&buf, binary.LittleEndian, v); err != nil {
			t.Fatal(err)
		}
	}
	buf.WriteString(body)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlatform(t *testing.T) {
	dir := t.TempDir()
	amd64 := fakeELF(t, dir, "amd64", elf.EM_X86_64, false, "")
	amd64b := fakeELF(t, dir, "amd64b", elf.EM_X86_64, false, "other")
	arm64 := fakeELF(t, dir, "arm64", elf.EM_AARCH64, false, "")
	dynamic := fakeELF(t, dir, "dynamic", elf.EM_X86_64, true, "")
	sparc := fakeELF(t, dir, "sparc", elf.EM_SPARCV9, false, "")
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		paths   []string
		want    string
		wantErr string
	}{
		{name: "one amd64", paths: []string{amd64}, want: "linux/amd64"},
		{name: "several agree", paths: []string{amd64, amd64b}, want: "linux/amd64"},
		{name: "arm64", paths: []string{arm64}, want: "linux/arm64"},
		{name: "mixed platforms", paths: []string{amd64, arm64}, wantErr: "one image holds one platform"},
		{name: "dynamically linked", paths: []string{amd64, dynamic}, wantErr: "CGO_ENABLED=0"},
		{name: "unknown machine", paths: []string{sparc}, wantErr: "not a platform the image builder knows"},
		{name: "not ELF", paths: []string{script}, wantErr: "not a Linux executable"},
		{name: "missing", paths: []string{filepath.Join(dir, "nope")}, wantErr: "no such file"},
		{name: "none", wantErr: "no binaries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Platform(tt.paths...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Platform() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Fatalf("Platform() = %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestGoArch(t *testing.T) {
	tests := []struct {
		m     elf.Machine
		class elf.Class
		order binary.ByteOrder
		want  string
	}{
		{elf.EM_X86_64, elf.ELFCLASS64, binary.LittleEndian, "amd64"},
		{elf.EM_386, elf.ELFCLASS32, binary.LittleEndian, "386"},
		{elf.EM_AARCH64, elf.ELFCLASS64, binary.LittleEndian, "arm64"},
		{elf.EM_ARM, elf.ELFCLASS32, binary.LittleEndian, "arm"},
		{elf.EM_PPC64, elf.ELFCLASS64, binary.LittleEndian, "ppc64le"},
		{elf.EM_PPC64, elf.ELFCLASS64, binary.BigEndian, "ppc64"},
		{elf.EM_S390, elf.ELFCLASS64, binary.BigEndian, "s390x"},
		{elf.EM_RISCV, elf.ELFCLASS64, binary.LittleEndian, "riscv64"},
		{elf.EM_RISCV, elf.ELFCLASS32, binary.LittleEndian, ""},
		{elf.EM_LOONGARCH, elf.ELFCLASS64, binary.LittleEndian, "loong64"},
		{elf.EM_MIPS, elf.ELFCLASS32, binary.BigEndian, ""},
	}
	for _, tt := range tests {
		if got := goArch(tt.m, tt.class, tt.order); got != tt.want {
			t.Errorf("goArch(%v, %v, %v) = %q, want %q", tt.m, tt.class, tt.order, got, tt.want)
		}
	}
}
