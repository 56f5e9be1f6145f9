"""``mpslint server``: a Language Server (LSP over stdio, built on pygls) for mpslint's diagnostics,
fixes, suppressions and rule pages in the editor.  See docs/editors.md."""
