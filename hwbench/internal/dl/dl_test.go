package dl

import "testing"

func TestNotFoundDetail(t *testing.T) {
	tests := []struct {
		name    string
		sonames []string
		msgs    []string
		want    string
	}{
		{"dedupes the loader's repeated message",
			[]string{"libcudart.so.13", "libcudart.so.12"},
			[]string{"libcudart.so.13: cannot open shared object file: No such file or directory", "libcudart.so.12: cannot open shared object file: No such file or directory"},
			"cannot open shared object file: No such file or directory"},
		{"keeps distinct messages",
			[]string{"a.so", "b.so"},
			[]string{"a.so: cannot open shared object file: No such file or directory", "b.so: wrong ELF class: ELFCLASS32"},
			"cannot open shared object file: No such file or directory; wrong ELF class: ELFCLASS32"},
		{"no messages", []string{"a.so"}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := notFoundDetail(tc.sonames, tc.msgs); got != tc.want {
				t.Errorf("notFoundDetail = %q, want %q", got, tc.want)
			}
		})
	}
}
