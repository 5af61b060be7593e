// Package configrepo reads configuration changes from the history of a git
// repository of configuration: for each commit, the settings it changed in a
// Caddyfile (parsed by Caddy's own Caddyfile parser, imports followed), a
// php-fpm or php.ini file, a .env file, Terraform variables or a Dockerfile,
// as changes.Change values (Source changes.SourceGit).
//
// It is the one package of the changes' side that links Caddy (the
// Caddyfile parser imports Caddy's core, and with it certmagic): the loader
// (ingest) imports it, while detect and report see only package changes.
package configrepo
