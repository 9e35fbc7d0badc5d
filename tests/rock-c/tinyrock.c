/* A pure-C Lua 5.4 module for the LuaRocks test of the `lutra` program
 * (crates/lutra-cli/tests/c_rock.rs): built offline by `luarocks make --local` from
 * tinyrock-scm-1.rockspec, then required inside a process. */
#include <lua.h>
#include <lauxlib.h>

/* tinyrock.add(a, b): the sum of two integers. */
static int tinyrock_add(lua_State *L) {
  lua_Integer a = luaL_checkinteger(L, 1);
  lua_Integer b = luaL_checkinteger(L, 2);
  lua_pushinteger(L, a + b);
  return 1;
}

/* tinyrock.upper(s): s in upper case, built with a luaL_Buffer. */
static int tinyrock_upper(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  luaL_Buffer b;
  char *out = luaL_buffinitsize(L, &b, len);
  for (size_t i = 0; i < len; i++)
    out[i] = (s[i] >= 'a' && s[i] <= 'z') ? (char)(s[i] - 'a' + 'A') : s[i];
  luaL_pushresultsize(&b, len);
  return 1;
}

static const luaL_Reg tinyrock_functions[] = {
  {"add", tinyrock_add},
  {"upper", tinyrock_upper},
  {NULL, NULL}
};

int luaopen_tinyrock(lua_State *L) {
  luaL_newlib(L, tinyrock_functions);
  return 1;
}
