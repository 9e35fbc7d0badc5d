//! The transfer and isolation rules through the public API: a script runs as a
//! process (`LuaRuntime::spawn_source`), its results come back as a `Message`
//! (`Outcome::Finished`), and a property test round-trips random table graphs.

use lutra_lua::transfer::{Message, Value};
use lutra_lua::{LuaRuntime, Options, Outcome, WaitOutcome};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::collections::HashSet;
use std::sync::OnceLock;

fn runtime() -> &'static LuaRuntime {
    static RUNTIME: OnceLock<LuaRuntime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        LuaRuntime::new(Options {
            workers: Some(2),
            ..Options::default()
        })
    })
}

/// Runs `source` as a process and returns how it ended.
fn run(source: &str) -> Outcome {
    let runtime = runtime();
    let process = runtime.spawn_source("=transfer test", source);
    assert_eq!(runtime.wait(), WaitOutcome::AllFinished);
    process.outcome()
}

fn finished(source: &str) -> Message {
    match run(source) {
        Outcome::Finished(message) => message,
        other => panic!("the script did not finish: {other:?}"),
    }
}

fn failed(source: &str) -> String {
    match run(source) {
        Outcome::Failed(error) => error,
        other => panic!("the script did not fail: {other:?}"),
    }
}

#[test]
fn scalars_keep_their_kind() {
    let message = finished(r#"return nil, true, 3, 3.0, "a\0b", math.mininteger"#);
    assert!(matches!(message.values[0], Value::Nil));
    assert!(matches!(message.values[1], Value::Boolean(true)));
    assert!(matches!(message.values[2], Value::Integer(3)));
    assert!(matches!(message.values[3], Value::Number(n) if n == 3.0));
    assert!(matches!(&message.values[4], Value::String(s) if &s[..] == b"a\0b"));
    assert!(matches!(message.values[5], Value::Integer(i64::MIN)));
}

#[test]
fn tables_keep_cycles_and_sharing() {
    let message = finished(
        "local shared = {} local t = { a = shared, b = shared } t.self = t return t, shared",
    );
    assert_eq!(
        message.tables.len(),
        2,
        "one table per Lua table, however often reached"
    );
    let Value::Table(root) = message.values[0] else {
        panic!("a table")
    };
    let Value::Table(shared) = message.values[1] else {
        panic!("a table")
    };
    let entry = |key: &str| {
        message.tables[root]
            .iter()
            .find(|(k, _)| matches!(k, Value::String(s) if &s[..] == key.as_bytes()))
            .map(|(_, v)| v.clone())
    };
    assert!(matches!(entry("self"), Some(Value::Table(i)) if i == root));
    assert!(matches!(entry("a"), Some(Value::Table(i)) if i == shared));
    assert!(matches!(entry("b"), Some(Value::Table(i)) if i == shared));
}

#[test]
fn refused_values_name_their_path() {
    let error = failed("return 1, { config = { 1, 2, { handler = coroutine.create(print) } } }");
    assert!(
        error.contains("cannot transfer coroutine at result #2.config[3].handler"),
        "{error}"
    );
    let error = failed("local up = 1 return function() return up end");
    assert!(error.contains("captures the local 'up'"), "{error}");
    let error = failed("return { f = string.rep }");
    assert!(error.contains("C function at result #1.f"), "{error}");
    let error = failed("return io.stdout");
    assert!(error.contains("userdata (file) at result #1"), "{error}");
}

#[test]
fn a_refused_send_sends_nothing_and_the_sender_goes_on() {
    finished(
        r#"
        local ch = lutra.channel(4)
        local ok, err = pcall(ch.send, ch, "fine", coroutine.create(print))
        assert(not ok and err:find("argument #2"))
        assert(not ch:try_receive())
        ch:send("later")
        assert(ch:receive() == "later")
    "#,
    );
}

#[test]
fn processes_are_isolated() {
    let message = finished(
        r#"
        seen_by_children = "main's global"
        string.extra = true
        local a = lutra.spawn(function() return seen_by_children, string.extra end)
        return a:join()
    "#,
    );
    assert!(matches!(message.values[..], [Value::Nil, Value::Nil]));
}

#[test]
fn isolated_functions_rebind_globals_and_themselves() {
    let message = finished(
        r#"
        local function fact(n) if n <= 1 then return 1 end return n * fact(n - 1) end
        local plain = function(x) return tostring(x) end
        return lutra.spawn(fact, 10):join(), lutra.spawn(plain, 5):join()
    "#,
    );
    assert!(matches!(message.values[0], Value::Integer(3_628_800)));
    assert!(matches!(&message.values[1], Value::String(s) if &s[..] == b"5"));
}

#[test]
fn frozen_values_are_shared_not_copied() {
    let message = finished(
        r#"
        local f = lutra.freeze({ 1, { 2 } })
        local back = lutra.spawn(function(g) return g end, f):join()
        assert(back == f)
        return f, back, f[2]
    "#,
    );
    let address = |value: &Value| match value {
        Value::Frozen(frozen) => frozen.address(),
        other => panic!("a frozen value, got {other:?}"),
    };
    assert_eq!(
        address(&message.values[0]),
        address(&message.values[1]),
        "the same object"
    );
    assert_ne!(
        address(&message.values[0]),
        address(&message.values[2]),
        "a nested node"
    );
    assert!(message.tables.is_empty(), "nothing was copied");
}

#[test]
fn moved_tables_are_emptied_only_on_success() {
    finished(
        r#"
        local ch = lutra.channel(2)
        local kept, moved = { 1 }, { 2 }
        assert(not pcall(ch.send, ch, lutra.move(kept), print))
        assert(kept[1] == 1 and not lutra.is_moved(kept))
        ch:send(lutra.move(moved))
        assert(lutra.is_moved(moved) and next(moved) == nil)
        assert(not pcall(function() return moved[1] end))
        assert(ch:receive()[1] == 2)
    "#,
    );
}

/// A scalar of a generated table graph.
#[derive(Debug, Clone)]
enum Scalar {
    Integer(i32),
    Float(f64),
    String(Vec<u8>),
    Boolean(bool),
}

/// A value of a generated graph: a scalar, or a reference to one of its tables.
#[derive(Debug, Clone)]
enum Entry {
    Scalar(Scalar),
    Table(usize),
}

/// Tables, each a list of (key, value); table 0 is the root.
type Graph = Vec<Vec<(Scalar, Entry)>>;

fn scalar() -> impl Strategy<Value = Scalar> {
    prop_oneof![
        (-5i32..40).prop_map(Scalar::Integer),
        (-1.0e6f64..1.0e6).prop_map(Scalar::Float),
        prop::collection::vec(any::<u8>(), 0..6).prop_map(Scalar::String),
        any::<bool>().prop_map(Scalar::Boolean),
    ]
}

fn graph() -> impl Strategy<Value = Graph> {
    (1usize..7).prop_flat_map(|tables| {
        let entry = prop_oneof![
            scalar().prop_map(Entry::Scalar),
            (0..tables).prop_map(Entry::Table),
        ];
        prop::collection::vec(prop::collection::vec((scalar(), entry), 0..6), tables)
    })
}

fn lua_scalar(scalar: &Scalar) -> String {
    match scalar {
        Scalar::Integer(i) => format!("{i}"),
        Scalar::Float(f) => format!("{f:?}"),
        Scalar::String(bytes) => {
            let escaped: String = bytes.iter().map(|b| format!("\\{b:03}")).collect();
            format!("\"{escaped}\"")
        }
        Scalar::Boolean(b) => format!("{b}"),
    }
}

/// A script that builds `graph`, sends its root to a process that sends it back,
/// checks that the copy is isomorphic (same shape, same sharing), and returns it.
fn round_trip_script(graph: &Graph) -> String {
    let mut source = format!(
        "local t = {{}} for i = 1, {} do t[i] = {{}} end\n",
        graph.len()
    );
    for (index, entries) in graph.iter().enumerate() {
        for (key, value) in entries {
            let value = match value {
                Entry::Scalar(s) => lua_scalar(s),
                Entry::Table(i) => format!("t[{}]", i + 1),
            };
            source.push_str(&format!(
                "t[{}][{}] = {}\n",
                index + 1,
                lua_scalar(key),
                value
            ));
        }
    }
    source.push_str(
        r#"
        local function iso(a, b, map, rev)
          if type(a) ~= type(b) then return false end
          if type(a) ~= "table" then return a == b and math.type(a) == math.type(b) end
          if map[a] ~= nil or rev[b] ~= nil then return map[a] == b and rev[b] == a end
          map[a], rev[b] = b, a
          local count = 0
          for k, v in pairs(a) do
            count = count + 1
            if not iso(v, rawget(b, k), map, rev) then return false end
          end
          for _ in pairs(b) do count = count - 1 end
          return count == 0
        end
        local ch, back = lutra.channel(1), lutra.channel(1)
        lutra.spawn(function(ch, back) back:send(ch:receive()) end, ch, back)
        ch:send(t[1])
        local copy = back:receive()
        assert(copy ~= t[1] and iso(t[1], copy, {}, {}), "the copy has the original's shape")
        return copy
    "#,
    );
    source
}

/// A key as Lua normalises it (an integral float is an integer).
fn normal_key(key: &Scalar) -> String {
    match key {
        Scalar::Integer(i) => format!("n{i}"),
        Scalar::Float(f) if f.fract() == 0.0 => format!("n{}", *f as i64),
        Scalar::Float(f) => format!("f{}", f.to_bits()),
        Scalar::String(bytes) => format!("s{bytes:?}"),
        Scalar::Boolean(b) => format!("b{b}"),
    }
}

/// Tables reachable from table 0 (a later assignment to a key replaces the earlier).
fn reachable(graph: &Graph) -> usize {
    let last_values = |table: &Vec<(Scalar, Entry)>| {
        let mut values = std::collections::HashMap::new();
        for (key, value) in table {
            values.insert(normal_key(key), value.clone());
        }
        values.into_values().collect::<Vec<_>>()
    };
    let mut seen = HashSet::from([0]);
    let mut work = vec![0];
    while let Some(table) = work.pop() {
        for value in last_values(&graph[table]) {
            if let Entry::Table(next) = value
                && seen.insert(next)
            {
                work.push(next);
            }
        }
    }
    seen.len()
}

#[test]
fn random_table_graphs_round_trip_through_channels() {
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&graph(), |graph| {
            let message = finished(&round_trip_script(&graph));
            prop_assert_eq!(message.values.len(), 1);
            prop_assert_eq!(message.tables.len(), reachable(&graph));
            Ok(())
        })
        .unwrap();
}
