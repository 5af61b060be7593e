package prometheus

import (
	"os/exec"
	"syscall"
)

// killWithParent has the kernel kill the child if the test binary dies
// (a panic or a go test -timeout), so no server outlives its test.
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
