package report

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// The files of testdata/deploy are the README's scheduling examples for
// `aftermath scan` (cron, a systemd service and timer, a Kubernetes CronJob).
// These tests check them with the tools that exist here, so the README never
// shows a file that does not load.
const deployDir = "testdata/deploy"

func TestDeploySystemdUnits(t *testing.T) {
	tool := testenv.Program(t, "systemd-analyze", "apt-get install systemd; without it the unit files are not verified")
	dir := t.TempDir()
	var units []string
	for _, name := range []string{"aftermath-scan.service", "aftermath-scan.timer"} {
		data, err := os.ReadFile(filepath.Join(deployDir, name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, p)
	}
	cmd := exec.Command(tool, append([]string{"verify", "--man=no"}, units...)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	err := cmd.Run()
	// verify exits 0 on unknown keys but says so: any word from it is a defect.
	if err != nil || strings.TrimSpace(stderr.String()) != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, stderr.String())
	}

	// The shell command inside ExecStart, with systemd's escapes undone.
	data, _ := os.ReadFile(units[0])
	m := regexp.MustCompile(`(?m)^ExecStart=/bin/sh -c '(.*)'$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("no ExecStart=/bin/sh -c '...' line")
	}
	script := strings.NewReplacer("%%", "%", "$$", "$").Replace(string(m[1]))
	checkShell(t, "ExecStart", script)
	if !strings.Contains(string(data), "SuccessExitStatus=1") {
		t.Error("the service must treat exit 1 (anomalous) as success")
	}
}

func TestDeployCron(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(deployDir, "aftermath-scan.cron"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := 0
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || regexp.MustCompile(`^[A-Z_]+=`).MatchString(line) {
			continue
		}
		jobs++
		f := strings.Fields(line)
		if len(f) < 7 {
			t.Fatalf("line %d: want five time fields, a user and a command: %q", i+1, line)
		}
		for j, r := range [][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}} {
			if err := cronField(f[j], r[0], r[1]); err != nil {
				t.Errorf("line %d, field %d %q: %v", i+1, j+1, f[j], err)
			}
		}
		// The command is everything after the user, as cron hands it to sh.
		rest := line
		for range 6 {
			rest = strings.TrimLeft(rest, " \t")
			rest = rest[strings.IndexAny(rest, " \t"):]
		}
		command := strings.TrimSpace(rest)
		if regexp.MustCompile(`(^|[^\\])%`).MatchString(command) {
			t.Errorf("line %d: an unescaped %% ends the command in a crontab: %q", i+1, command)
		}
		checkShell(t, "cron command", strings.ReplaceAll(command, `\%`, "%"))
	}
	if jobs != 1 {
		t.Errorf("%d jobs, want 1", jobs)
	}
}

// cronField checks one crontab time field: *, numbers, ranges, steps, lists.
func cronField(f string, lo, hi int) error {
	for _, part := range strings.Split(f, ",") {
		base, step, hasStep := strings.Cut(part, "/")
		if hasStep {
			if n, err := strconv.Atoi(step); err != nil || n < 1 {
				return fmt.Errorf("bad step %q", step)
			}
		}
		if base == "*" {
			continue
		}
		a, b, isRange := strings.Cut(base, "-")
		for _, v := range []string{a, b} {
			if !isRange && v == b {
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < lo || n > hi {
				return fmt.Errorf("%q is not in %d-%d", v, lo, hi)
			}
		}
	}
	return nil
}

// cronJob mirrors the fields of batch/v1 CronJob that the example uses;
// decoding with KnownFields fails on any other (a typo is not a field).
type cronJob struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Schedule                   string `yaml:"schedule"`
		TimeZone                   string `yaml:"timeZone"`
		ConcurrencyPolicy          string `yaml:"concurrencyPolicy"`
		StartingDeadlineSeconds    int    `yaml:"startingDeadlineSeconds"`
		SuccessfulJobsHistoryLimit int    `yaml:"successfulJobsHistoryLimit"`
		FailedJobsHistoryLimit     int    `yaml:"failedJobsHistoryLimit"`
		JobTemplate                struct {
			Spec struct {
				BackoffLimit          *int `yaml:"backoffLimit"`
				ActiveDeadlineSeconds int  `yaml:"activeDeadlineSeconds"`
				Template              struct {
					Metadata struct {
						Labels map[string]string `yaml:"labels"`
					} `yaml:"metadata"`
					Spec podSpec `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		} `yaml:"jobTemplate"`
	} `yaml:"spec"`
}

type podSpec struct {
	RestartPolicy   string `yaml:"restartPolicy"`
	SecurityContext struct {
		RunAsNonRoot bool `yaml:"runAsNonRoot"`
		RunAsUser    int  `yaml:"runAsUser"`
		FSGroup      int  `yaml:"fsGroup"`
	} `yaml:"securityContext"`
	Containers []struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Env     []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom struct {
				SecretKeyRef struct {
					Name     string `yaml:"name"`
					Key      string `yaml:"key"`
					Optional bool   `yaml:"optional"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		Resources struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		SecurityContext struct {
			AllowPrivilegeEscalation bool `yaml:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   bool `yaml:"readOnlyRootFilesystem"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
	} `yaml:"containers"`
	Volumes []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		PersistentVolumeClaim *struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
		EmptyDir *struct{} `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

func TestDeployCronJob(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(deployDir, "cronjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cj cronJob
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cj); err != nil {
		t.Fatalf("cronjob.yaml: %v", err)
	}
	s := cj.Spec
	if cj.APIVersion != "batch/v1" || cj.Kind != "CronJob" || cj.Metadata.Name == "" {
		t.Errorf("apiVersion %q kind %q name %q: want a batch/v1 CronJob with a name", cj.APIVersion, cj.Kind, cj.Metadata.Name)
	}
	f := strings.Fields(s.Schedule)
	if len(f) != 5 {
		t.Errorf("schedule %q: want five fields", s.Schedule)
	}
	for j, r := range [][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}} {
		if j < len(f) {
			if err := cronField(f[j], r[0], r[1]); err != nil {
				t.Errorf("schedule %q: %v", s.Schedule, err)
			}
		}
	}
	if _, err := time.LoadLocation(s.TimeZone); err != nil {
		t.Errorf("timeZone %q: %v", s.TimeZone, err)
	}
	if s.ConcurrencyPolicy != "Forbid" {
		t.Errorf("concurrencyPolicy %q: two scans at once would announce the same thing twice", s.ConcurrencyPolicy)
	}
	job := s.JobTemplate.Spec
	if job.BackoffLimit == nil || *job.BackoffLimit != 0 {
		t.Error("backoffLimit must be 0: the next hour's run is the retry")
	}
	pod := job.Template.Spec
	if pod.RestartPolicy != "Never" {
		t.Errorf("restartPolicy %q, want Never", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.Command) != 2 || c.Command[0] != "/bin/sh" || c.Command[1] != "-c" || len(c.Args) != 1 {
		t.Fatalf("command %q args %q: want /bin/sh -c SCRIPT", c.Command, c.Args)
	}
	checkShell(t, "CronJob args", c.Args[0])
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		n := 0
		for _, set := range []bool{v.ConfigMap != nil, v.PersistentVolumeClaim != nil, v.EmptyDir != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			t.Errorf("volume %q has %d sources, want 1", v.Name, n)
		}
		volumes[v.Name] = true
	}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			t.Errorf("volume mount %q names no volume", m.Name)
		}
	}
	webhook := false
	for _, e := range c.Env {
		if e.Name == "AFTERMATH_WEBHOOK_URL" {
			webhook = e.Value == "" && e.ValueFrom.SecretKeyRef.Name != "" && e.ValueFrom.SecretKeyRef.Key != ""
		}
	}
	if !webhook {
		t.Error("AFTERMATH_WEBHOOK_URL must come from a Secret, never a literal value")
	}
}

// checkShell checks a shell script's syntax with sh -n, and that it runs
// `aftermath scan` over the last hour with a state file.
func checkShell(t *testing.T, what, script string) {
	t.Helper()
	for _, want := range []string{"/usr/local/bin/aftermath scan", "--since 1h", "--state ", "--out "} {
		if !strings.Contains(script, want) {
			t.Errorf("%s lacks %q: %s", what, want, script)
		}
	}
	sh := testenv.Program(t, "sh", "apt-get install dash; without it the script's syntax is not checked")
	if out, err := exec.Command(sh, "-n", "-c", script).CombinedOutput(); err != nil {
		t.Errorf("%s: sh -n: %v\n%s\n%s", what, err, out, script)
	}
}
