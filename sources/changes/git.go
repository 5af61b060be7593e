package changes

// SourceGit is the Source of changes read from a git repository.
const SourceGit = "git"
