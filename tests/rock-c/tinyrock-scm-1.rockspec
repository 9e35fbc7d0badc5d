-- A pure-C rock for the `lutra` program's LuaRocks test: built from this directory
-- (`luarocks make`), no download.
rockspec_format = "3.0"
package = "tinyrock"
version = "scm-1"
source = { url = "file://." }
description = { summary = "A tiny C module for Lutra's tests", license = "MIT" }
dependencies = { "lua >= 5.4" }
build = {
  type = "builtin",
  modules = { tinyrock = "tinyrock.c" },
}
