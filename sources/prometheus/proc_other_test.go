//go:build !linux

package prometheus

import "os/exec"

// killWithParent: only Linux can tie a child's life to its parent's; the
// test's cleanup kills the server everywhere.
func killWithParent(*exec.Cmd) {}
