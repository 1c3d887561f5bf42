package images

import (
	"debug/elf"
	"encoding/binary"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Platform is the platform of static Linux executables, read from their ELF headers, so that an
// image's platform is what its binaries run on rather than what the building machine is. Every
// binary must be static (the base has no C library or loader) and all must agree.
func Platform(paths ...string) (v1.Platform, error) {
	var p v1.Platform
	for i, path := range paths {
		arch, err := elfArch(path)
		if err != nil {
			return v1.Platform{}, err
		}
		if i > 0 && arch != p.Architecture {
			return v1.Platform{}, fmt.Errorf("%s is built for %s, %s for %s: one image holds one platform", path, arch, paths[0], p.Architecture)
		}
		p = v1.Platform{OS: "linux", Architecture: arch}
	}
	if p.OS == "" {
		return v1.Platform{}, fmt.Errorf("no binaries to read a platform from")
	}
	return p, nil
}

func elfArch(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: not a Linux executable: %w", path, err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return "", fmt.Errorf("%s: ELF type %v is not an executable", path, f.Type)
	}
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return "", fmt.Errorf("%s: built for %v, not Linux", path, f.OSABI)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return "", fmt.Errorf("%s is dynamically linked and the image has no C library: build it with CGO_ENABLED=0", path)
		}
	}
	arch := goArch(f.Machine, f.Class, f.ByteOrder)
	if arch == "" {
		return "", fmt.Errorf("%s: machine %v is not a platform the image builder knows", path, f.Machine)
	}
	return arch, nil
}

// goArch names an ELF machine the way GOARCH and OCI platforms do.
func goArch(m elf.Machine, class elf.Class, order binary.ByteOrder) string {
	switch m {
	case elf.EM_X86_64:
		return "amd64"
	case elf.EM_386:
		return "386"
	case elf.EM_AARCH64:
		return "arm64"
	case elf.EM_ARM:
		return "arm"
	case elf.EM_S390:
		return "s390x"
	case elf.EM_LOONGARCH:
		return "loong64"
	case elf.EM_RISCV:
		if class == elf.ELFCLASS64 {
			return "riscv64"
		}
	case elf.EM_PPC64:
		if order == binary.LittleEndian {
			return "ppc64le"
		}
		return "ppc64"
	}
	return ""
}
