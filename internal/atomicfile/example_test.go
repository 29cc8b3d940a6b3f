package atomicfile_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/collsim/collsim/internal/atomicfile"
)

func ExampleWrite() {
	dir, err := os.MkdirTemp("", "atomicfile-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "profile.yaml")
	if err := atomicfile.Write(path, []byte("format: collsim-profile/1\n"), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	// Output: format: collsim-profile/1
}
