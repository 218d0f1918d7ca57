//! Places of queues in shared memory, each a queue's database, identity and name and what is kept
//! of it: the counts of its minute (queue_minutes.rs), when its earliest job due later is due
//! (due.rs).

use pgrx::pg_sys;

/// The longest queue name a place holds (a longer one gets no place: README).
pub(crate) const NAME_BYTES: usize = 128;

#[derive(Clone, Copy)]
pub(crate) struct QueuePlace<T: Copy> {
    pub database: u32,
    /// Who claims the queue's jobs (its owner); 0: the place is free.
    pub owner: u32,
    name_len: u8,
    name: [u8; NAME_BYTES],
    pub kept: T,
}

impl<T: Copy> QueuePlace<T> {
    /// A free place, keeping `kept` (what a place is given when it is taken).
    pub const fn free(kept: T) -> Self {
        QueuePlace {
            database: 0,
            owner: 0,
            name_len: 0,
            name: [0; NAME_BYTES],
            kept,
        }
    }

    pub fn taken(&self) -> bool {
        self.owner != 0
    }

    /// Its queue's name.
    pub fn queue(&self) -> String {
        String::from_utf8_lossy(&self.name[..self.name_len as usize]).into_owned()
    }

    fn holds(&self, database: u32, owner: u32, queue: &[u8]) -> bool {
        self.taken()
            && self.database == database
            && self.owner == owner
            && &self.name[..self.name_len as usize] == queue
    }
}

/// This backend's database, as places name it.
pub(crate) fn database() -> u32 {
    unsafe { pg_sys::MyDatabaseId }.to_u32()
}

/// The place of `owner`'s `queue` in this database, if it has one.
pub(crate) fn place<'a, T: Copy>(
    places: &'a mut [QueuePlace<T>],
    owner: u32,
    queue: &str,
) -> Option<&'a mut QueuePlace<T>> {
    let database = database();
    places
        .iter_mut()
        .find(|place| place.holds(database, owner, queue.as_bytes()))
}

/// The place of `owner`'s `queue` in this database, taken (keeping `kept`) if it has none; None
/// when every place is taken, or for a name over NAME_BYTES bytes (or an owner 0).
pub(crate) fn place_of<'a, T: Copy>(
    places: &'a mut [QueuePlace<T>],
    owner: u32,
    queue: &str,
    kept: T,
) -> Option<&'a mut QueuePlace<T>> {
    let (database, name) = (database(), queue.as_bytes());
    if name.len() > NAME_BYTES || owner == 0 {
        return None;
    }
    let found = places
        .iter()
        .position(|place| place.holds(database, owner, name))
        .or_else(|| places.iter().position(|place| !place.taken()))?;
    let place = &mut places[found];
    if !place.taken() {
        *place = QueuePlace::free(kept);
        place.database = database;
        place.owner = owner;
        place.name_len = name.len() as u8;
        place.name[..name.len()].copy_from_slice(name);
    }
    Some(place)
}
