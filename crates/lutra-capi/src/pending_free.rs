//! What `stm_free` can check before it accepts a block: that it is not freed already
//! (a free pending in a running or committed transaction whose block has not been
//! given back to the C library yet), and that it is not on the calling thread's
//! stack or in a loaded object's static data (globals). A block from `stm_malloc`,
//! `stm_calloc` or the program's own `malloc` passes; what cannot be checked (a
//! pointer into a block, a block already given back to the C library) remains the
//! caller's responsibility.
//!
//! # Invariants
//! - The pending frees hold an address from the `stm_free` that claimed it until the
//!   block is given back to the C library ([`release`], after the freeing
//!   transaction committed and no transaction can read the block any more) or the
//!   claiming attempt rolls back ([`abandon`], which removes the entry only if it
//!   still holds that claim's token: a later claim of the same address is left
//!   alone).
//! - Each claim has its own token, never 0.
//! - An address is pending in its bucket of `TABLE` (the bucket [`bucket_of`] gives)
//!   or, when the bucket's pairs were all taken, in `SPILLED`; the bucket's
//!   `spilled` counts its addresses there. Both are read and written only under the
//!   bucket's lock.
//!
//! # Protocol: a free
//! 1. [`claim`] checks the address and records it with a fresh token.
//! 2. The attempt records `abandon` for the address and token (run if it rolls back)
//!    and the free itself, with `release` (run once the block may be reused).
//!
//! A claim and a release lock one bucket, a line of its own that holds the lock, the
//! pairs and the spill count: one cache line passes between threads that free
//! blocks, and one locked instruction per call (the lock's CAS; it is released with
//! a plain store). A `Mutex` and a `HashMap` per shard took three lines (the lock
//! with the map's header, its control bytes, its bucket) and two locked
//! instructions.

use crate::status::{CapiError, CapiResult};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Shards of the spilled pending frees (those whose bucket was full), by address.
const SHARDS: usize = 64;

/// One shard of the spilled pending frees: address → token of the claim.
pub(crate) type Shard = Option<HashMap<usize, u64, BuildHasherDefault<AddressHasher>>>;

/// Hashes a block's address with one multiplication (Fibonacci hashing): the keys
/// are addresses chosen by the C allocator, not by an adversary, so the default
/// SipHash (about a hundred instructions per look-up, and a free looks twice and
/// its release once) buys nothing here.
#[derive(Default)]
pub(crate) struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }

    fn write_u64(&mut self, value: u64) {
        // The high bits of the product depend on every bit of the address; the
        // table takes its bucket from the low bits and its tag from the top ones,
        // so both get them (the rotation).
        self.0 = (self.0 ^ value)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(26);
    }
}

/// One shard's lock on a cache line of its own: two threads freeing blocks of
/// different shards do not pass a line back and forth.
#[repr(align(64))]
struct PaddedShard(Mutex<Shard>);

/// The pending frees that did not fit in their bucket.
static SPILLED: [PaddedShard; SHARDS] = [const { PaddedShard(Mutex::new(None)) }; SHARDS];

/// Claims a bucket holds in its own line.
const PAIRS: usize = 3;

/// Buckets of `TABLE` (a power of two): 64 KiB of zeroed static memory, room for
/// 3,072 pending frees before a bucket is likely to spill. Blocks wait in limbo for
/// an epoch or two of every thread's transactions (`lutra_stm`'s `epoch.rs`): about
/// a hundred with one thread freeing, thousands while a thread is preempted inside
/// a transaction, when some buckets spill. A larger table spills less but its lines
/// go cold: with 4,096 buckets a claim's lock, on a line the thread had not touched
/// for long, took three times as long on one thread (`docs/performance.md`).
const BUCKETS: usize = 1024;

/// A bucket of pending frees: a lock, the address (0: none) and token of up to
/// [`PAIRS`] claims, and how many of the bucket's addresses are in `SPILLED`, on one
/// cache line. Its fields other than `lock` are touched only by the lock's holder
/// (and by [`forget_after_fork`], alone in the child).
#[repr(C, align(64))]
struct Bucket {
    /// 0 when free, 1 when held.
    lock: AtomicUsize,
    pairs: [(AtomicUsize, AtomicU64); PAIRS],
    spilled: AtomicUsize,
}

impl Bucket {
    /// An empty, unlocked bucket.
    const fn new() -> Self {
        Self {
            lock: AtomicUsize::new(0),
            pairs: [const { (AtomicUsize::new(0), AtomicU64::new(0)) }; PAIRS],
            spilled: AtomicUsize::new(0),
        }
    }

    /// Runs `f` with the bucket locked. The lock is held for a few loads and stores
    /// (and, once a bucket spilled, a look-up in `SPILLED`); a waiter spins, and
    /// yields its processor now and then in case the holder was preempted.
    fn locked<R>(&self, f: impl FnOnce(&Self) -> R) -> R {
        let mut spins = 0u32;
        while self
            .lock
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spins += 1;
            if spins.is_multiple_of(64) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        /// Unlocks on the way out, a panic included (none is expected: `f` only
        /// reads and writes words, and inserts into a map).
        struct Unlock<'a>(&'a AtomicUsize);
        impl Drop for Unlock<'_> {
            fn drop(&mut self) {
                // ORDERING: publishes the holder's writes to the next holder, whose
                // acquiring CAS reads this store.
                self.0.store(0, Ordering::Release);
            }
        }
        let _unlock = Unlock(&self.lock);
        f(self)
    }

    /// The pair that holds `addr`, if any.
    fn find(&self, addr: usize) -> Option<&(AtomicUsize, AtomicU64)> {
        self.pairs
            .iter()
            .find(|(held, _)| held.load(Ordering::Relaxed) == addr)
    }

    /// Removes the claim of `addr` if `keep_if` does not keep it (given its token):
    /// from the pairs, or from `SPILLED` if the bucket spilled.
    fn remove(&self, addr: usize, keep_if: impl Fn(u64) -> bool) {
        if let Some((held, token)) = self.find(addr) {
            if !keep_if(token.load(Ordering::Relaxed)) {
                held.store(0, Ordering::Relaxed);
            }
            return;
        }
        if self.spilled.load(Ordering::Relaxed) == 0 {
            return;
        }
        if let Some(map) = spilled_shard(addr).as_mut()
            && map.get(&addr).is_some_and(|&token| !keep_if(token))
        {
            map.remove(&addr);
            self.spilled.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The pending frees, by address ([`bucket_of`]).
static TABLE: [Bucket; BUCKETS] = [const { Bucket::new() }; BUCKETS];

/// Starts loading `bucket`'s line: [`claim`] checks the address first (its stack
/// and the loaded objects, some hundred instructions), and the line, one of
/// [`BUCKETS`], is seldom in the first-level cache when a thread frees a block now
/// and then.
#[inline(always)]
fn prefetch(bucket: &Bucket) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees and cannot
    // fault; the address is a bucket's, valid anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_ET0 }>(
            (bucket as *const Bucket).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bucket;
}

/// The bucket of `addr`: the top bits of a Fibonacci hash of its 16-byte granule
/// (the C allocator's alignment), so that neighbouring blocks fall in different
/// buckets.
fn bucket_of(addr: usize) -> &'static Bucket {
    // An empty pair holds 0: NULL is never claimed (`stm_free(NULL)` frees nothing).
    debug_assert_ne!(addr, 0);
    let hash = ((addr >> 4) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    &TABLE[(hash >> (u64::BITS - BUCKETS.trailing_zeros())) as usize]
}

/// The start of the last range of tokens handed to a thread ([`next_token`]).
static TOKENS: AtomicU64 = AtomicU64::new(0);
/// How many tokens a thread takes at a time.
const TOKEN_RANGE: u64 = 1 << 20;

unsafe extern "C" {
    fn free(block: *mut c_void);
    fn dladdr(addr: *const c_void, info: *mut DlInfo) -> c_int;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn pthread_self() -> usize;
    fn pthread_getattr_np(thread: usize, attr: *mut PthreadAttr) -> c_int;
    fn pthread_attr_getstack(
        attr: *const PthreadAttr,
        stack: *mut *mut c_void,
        size: *mut usize,
    ) -> c_int;
    fn pthread_attr_destroy(attr: *mut PthreadAttr) -> c_int;
}

/// `Dl_info`.
#[repr(C)]
struct DlInfo {
    fname: *const c_char,
    fbase: *mut c_void,
    sname: *const c_char,
    saddr: *mut c_void,
}

/// `pthread_attr_t` (56 bytes on x86-64 and aarch64 Linux; room for more).
#[repr(C, align(8))]
struct PthreadAttr([u8; 128]);

/// The shard of `SPILLED` that holds `addr` if its bucket spilled it, locked.
fn spilled_shard(addr: usize) -> std::sync::MutexGuard<'static, Shard> {
    SPILLED[(addr >> 4) % SHARDS]
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    /// The calling thread's next token and the end of its range (`(0, 0)`: none yet).
    static TOKEN: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// A token no other claim has: the next of the calling thread's range, which it
/// takes `TOKEN_RANGE` at a time from `TOKENS` (one shared update per range, not
/// one per free). Never 0: the first token of a range is skipped.
fn next_token() -> u64 {
    let (next, end) = TOKEN.try_with(std::cell::Cell::get).unwrap_or((0, 0));
    let (token, end) = if next != end {
        (next, end)
    } else {
        let start = TOKENS.fetch_add(TOKEN_RANGE, Ordering::Relaxed);
        (start + 1, start + TOKEN_RANGE)
    };
    let _ = TOKEN.try_with(|cell| cell.set((token + 1, end)));
    token
}

thread_local! {
    /// The calling thread's stack, `[low, high)`, once asked (`(0, 0)`: not yet, or
    /// unknown).
    static STACK: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// The calling thread's stack, `[low, high)`, if the C library tells it.
fn thread_stack() -> Option<(usize, usize)> {
    let known = STACK.try_with(std::cell::Cell::get).ok()?;
    if known.1 != 0 {
        return Some(known);
    }
    let mut attr = PthreadAttr([0; 128]);
    let (mut low, mut size) = (std::ptr::null_mut(), 0usize);
    // SAFETY: `attr` has room for a `pthread_attr_t` and is destroyed after use;
    // the out parameters are writable.
    let found = unsafe {
        pthread_getattr_np(pthread_self(), &mut attr) == 0 && {
            let got = pthread_attr_getstack(&attr, &mut low, &mut size) == 0;
            pthread_attr_destroy(&mut attr);
            got
        }
    };
    if !found || size == 0 {
        return None;
    }
    let stack = (low as usize, low as usize + size);
    let _ = STACK.try_with(|cell| cell.set(stack));
    Some(stack)
}

/// Why `addr` cannot be a block of the C allocator, if that can be told: on the
/// calling thread's stack (a plain thread: a task's stack is not looked at), or in a
/// loaded object (the program or a library: its globals).
fn not_a_heap_block(addr: usize, in_task: bool) -> Option<&'static str> {
    if !in_task && thread_stack().is_some_and(|(low, high)| (low..high).contains(&addr)) {
        return Some("it is on the calling thread's stack");
    }
    in_loaded_object(addr)
        .then_some("it lies in the program or a loaded library (a global or static variable)")
}

/// glibc's `_dl_find_object` (2.35 and later): lock-free, unlike `dladdr`, which
/// takes the loader's lock.
type FindObject = unsafe extern "C" fn(addr: *mut c_void, result: *mut c_void) -> c_int;

/// `_dl_find_object` if the C library has it.
fn find_object() -> Option<FindObject> {
    static FOUND: OnceLock<usize> = OnceLock::new();
    let address = *FOUND.get_or_init(|| {
        // SAFETY: looks a function up by its NUL-terminated name (RTLD_DEFAULT).
        unsafe { dlsym(std::ptr::null_mut(), c"_dl_find_object".as_ptr()) as usize }
    });
    // SAFETY: a non-zero address is `_dl_find_object`, of this signature.
    (address != 0).then(|| unsafe { std::mem::transmute::<usize, FindObject>(address) })
}

/// Whether `addr` lies in the mapping of the program or of a loaded library.
fn in_loaded_object(addr: usize) -> bool {
    if let Some(find) = find_object() {
        // `struct dl_find_object` (96 bytes on x86-64 and aarch64): room to spare.
        let mut result = [0u64; 32];
        // SAFETY: `result` has room for the structure; the call only reads the
        // loader's tables.
        return unsafe { find(addr as *mut c_void, result.as_mut_ptr().cast()) } == 0;
    }
    let mut info = DlInfo {
        fname: std::ptr::null(),
        fbase: std::ptr::null_mut(),
        sname: std::ptr::null(),
        saddr: std::ptr::null_mut(),
    };
    // SAFETY: `dladdr` only looks the address up among the loaded objects.
    unsafe { dladdr(addr as *const c_void, &mut info) != 0 }
}

/// Every shard's lock of `SPILLED`, held across a `fork` (`fork.rs`). The buckets'
/// locks are not: the child empties every bucket, lock included, whatever another
/// thread of the parent was doing with it.
pub(crate) fn hold_for_fork() -> Vec<std::sync::MutexGuard<'static, Shard>> {
    SPILLED
        .iter()
        .map(|shard| shard.0.lock().unwrap_or_else(PoisonError::into_inner))
        .collect()
}

/// In the child of a `fork`, under the locks of [`hold_for_fork`]: forgets every
/// pending free (the transactions that made them are gone from this process).
pub(crate) fn forget_after_fork(shards: &mut [std::sync::MutexGuard<'static, Shard>]) {
    for shard in shards {
        **shard = None;
    }
    // The child runs one thread: no bucket is in use, even one whose lock a thread
    // of the parent held at the fork.
    for bucket in &TABLE {
        for (held, token) in &bucket.pairs {
            held.store(0, Ordering::Relaxed);
            token.store(0, Ordering::Relaxed);
        }
        bucket.spilled.store(0, Ordering::Relaxed);
        bucket.lock.store(0, Ordering::Release);
    }
}

/// Step 1 of a free: checks `addr` and records its claim; returns the token.
///
/// # Errors
/// `LUTRA_EINVAL` for a block whose free is pending (freed twice), on the caller's
/// stack, or in a loaded object.
pub(crate) fn claim(addr: usize, in_task: bool) -> CapiResult<u64> {
    let bucket = bucket_of(addr);
    prefetch(bucket);
    // Checked before the bucket is locked (a stack or a loaded object is never
    // pending: such an address is never claimed), so the lock is taken once.
    if let Some(why) = not_a_heap_block(addr, in_task) {
        return Err(CapiError::invalid(format!(
            "{addr:#x} is not a block of the C allocator: {why}; nothing is freed"
        )));
    }
    let token = next_token();
    bucket.locked(|bucket| {
        if bucket.find(addr).is_some() {
            return Err(double_free(addr));
        }
        if let Some((held, held_token)) = bucket
            .pairs
            .iter()
            .find(|(held, _)| held.load(Ordering::Relaxed) == 0)
            && bucket.spilled.load(Ordering::Relaxed) == 0
        {
            held.store(addr, Ordering::Relaxed);
            held_token.store(token, Ordering::Relaxed);
            return Ok(token);
        }
        claim_spilled(bucket, addr, token)
    })
}

/// The rest of [`claim`] for a bucket that spilled or is full, under its lock:
/// `addr` is not in its pairs. A spilled bucket looks in `SPILLED` before it files
/// `addr` in a free pair, so that a claim pending there is found.
#[cold]
fn claim_spilled(bucket: &Bucket, addr: usize, token: u64) -> CapiResult<u64> {
    let mut shard = spilled_shard(addr);
    let map = shard.get_or_insert_with(HashMap::default);
    if map.contains_key(&addr) {
        return Err(double_free(addr));
    }
    if let Some((held, held_token)) = bucket
        .pairs
        .iter()
        .find(|(held, _)| held.load(Ordering::Relaxed) == 0)
    {
        held.store(addr, Ordering::Relaxed);
        held_token.store(token, Ordering::Relaxed);
    } else {
        map.insert(addr, token);
        bucket.spilled.fetch_add(1, Ordering::Relaxed);
    }
    Ok(token)
}

#[cold]
fn double_free(addr: usize) -> CapiError {
    CapiError::invalid(format!(
        "{addr:#x} is freed already (by this transaction or another that has not \
         released it yet): a double free; nothing is freed"
    ))
}

/// Undoes the claim `token` of `addr` (the claiming attempt rolled back): the
/// engine's release function of an allocation record, whose size carries the token.
///
/// # Safety
/// None beyond the engine's contract for release functions; never frees.
pub(crate) unsafe fn abandon(addr: usize, token: usize) {
    bucket_of(addr).locked(|bucket| bucket.remove(addr, |held| held != token as u64));
}

/// Gives a freed block back to the C library and forgets its claim.
///
/// # Safety
/// `addr` must come from the C library's allocator and not be freed yet.
pub(crate) unsafe fn release(addr: usize, _size: usize) {
    bucket_of(addr).locked(|bucket| bucket.remove(addr, |_| false));
    // SAFETY: the caller's contract.
    unsafe { free(addr as *mut c_void) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    /// Neighbouring blocks (16 bytes apart, as the C allocator hands them out) land
    /// in different buckets of a small table, and their tags differ.
    #[test]
    fn neighbouring_addresses_spread_over_buckets_and_tags() {
        let build = BuildHasherDefault::<AddressHasher>::default();
        let hashes: Vec<u64> = (0..64usize)
            .map(|i| build.hash_one(0x5555_0000_0010 + 16 * i))
            .collect();
        let buckets: std::collections::BTreeSet<u64> = hashes.iter().map(|h| h & 63).collect();
        let tags: std::collections::BTreeSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert!(buckets.len() >= 32, "{} buckets of 64", buckets.len());
        assert!(tags.len() >= 32, "{} tags of 64", tags.len());
    }

    /// Addresses past a bucket's pairs spill into a shard map and are found there: a
    /// second claim is refused, a stale token leaves the claim in place, and once
    /// every claim is abandoned the bucket takes new ones in its pairs again. The
    /// addresses are made up (never freed: only `abandon` removes them), all in one
    /// bucket, far from any mapping.
    #[test]
    fn a_full_bucket_spills_and_still_refuses_a_second_claim() {
        let first = 0x6a5a_0000_0000usize;
        let target = bucket_of(first) as *const Bucket;
        let same: Vec<usize> = (0..)
            .map(|i| first + 16 * i)
            .filter(|&addr| std::ptr::eq(bucket_of(addr), target))
            .take(PAIRS + 3)
            .collect();
        let tokens: Vec<u64> = same
            .iter()
            .map(|&addr| claim(addr, false).unwrap())
            .collect();
        assert!(bucket_of(first).spilled.load(Ordering::Relaxed) >= 3);
        for &addr in &same {
            assert!(
                claim(addr, false).is_err(),
                "a double free of {addr:#x} was accepted"
            );
        }
        let last = *same.last().unwrap();
        // SAFETY: `abandon` never frees.
        unsafe { abandon(last, *tokens.last().unwrap() as usize + 1) };
        assert!(
            claim(last, false).is_err(),
            "a stale token abandoned a spilled claim"
        );
        for (&addr, &token) in same.iter().zip(&tokens) {
            // SAFETY: as above.
            unsafe { abandon(addr, token as usize) };
        }
        assert_eq!(bucket_of(first).spilled.load(Ordering::Relaxed), 0);
        let again = claim(last, false).unwrap();
        assert!(
            bucket_of(last).find(last).is_some(),
            "not back in the pairs"
        );
        // SAFETY: as above.
        unsafe { abandon(last, again as usize) };
    }

    /// Tokens come from per-thread ranges: never 0, never twice, across threads and
    /// across the end of a range.
    #[test]
    fn tokens_are_unique_and_never_zero_across_threads_and_ranges() {
        let per_thread = TOKEN_RANGE as usize + 10;
        let threads: Vec<_> = (0..3)
            .map(|_| std::thread::spawn(move || (0..per_thread).map(|_| next_token()).collect()))
            .collect();
        let mut all = std::collections::HashSet::new();
        for thread in threads {
            let tokens: Vec<u64> = thread.join().unwrap();
            for token in tokens {
                assert_ne!(token, 0);
                assert!(all.insert(token), "token {token} handed out twice");
            }
        }
    }

    /// One lock per claim: a second claim of a pending block is refused, an abandoned
    /// claim frees the address for a new one, and an old token does not abandon the
    /// new claim.
    #[test]
    fn a_pending_block_is_refused_until_its_claim_is_abandoned() {
        let block = Box::into_raw(Box::new([0u64; 4])) as usize;
        let first = claim(block, false).unwrap();
        assert!(claim(block, false).is_err(), "a double free was accepted");
        // SAFETY: `abandon` never frees.
        unsafe { abandon(block, first as usize) };
        let second = claim(block, false).unwrap();
        assert_ne!(first, second);
        // SAFETY: as above; the stale token leaves the new claim in place.
        unsafe { abandon(block, first as usize) };
        assert!(
            claim(block, false).is_err(),
            "a stale token abandoned a claim"
        );
        // SAFETY: as above.
        unsafe { abandon(block, second as usize) };
        // SAFETY: the block came from `Box::into_raw` above and is freed once.
        drop(unsafe { Box::from_raw(block as *mut [u64; 4]) });
    }
}
