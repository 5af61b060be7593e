package sources

import "time"

// Change is one configuration change: from a git commit, an explicit changes.yaml
// entry, or inferred from a step in a metric.
type Change struct {
	Time   time.Time `json:"time" yaml:"time"`
	Source string    `json:"source" yaml:"source"`                 // "git", "changes.yaml", "metrics"
	Ref    string    `json:"ref,omitempty" yaml:"ref,omitempty"`   // commit hash, ticket, deploy id
	File   string    `json:"file,omitempty" yaml:"file,omitempty"` // path inside the config repository
	Key    string    `json:"key,omitempty" yaml:"key,omitempty"`   // e.g. "listen.backlog"
	Old    string    `json:"old,omitempty" yaml:"old,omitempty"`
	New    string    `json:"new,omitempty" yaml:"new,omitempty"`
	Note   string    `json:"note,omitempty" yaml:"note,omitempty"` // commit message or free text
	Author string    `json:"author,omitempty" yaml:"author,omitempty"`
}
