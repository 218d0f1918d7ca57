//! When a scheduled job is due: parsing cron schedules and computing their slots.
//!
//! # Syntax
//!
//! - Five cron fields `minute hour day-of-month month day-of-week`, or six with a leading
//!   `second` field. Each field is `*` or a comma-separated list of items: a value `5`, a range
//!   `1-5`, or either with a step: `*/15`, `10-40/10`, `5/15` (from 5 to the field's maximum
//!   every 15). Months accept `JAN`..`DEC` and days of week `SUN`..`SAT`, in any case; day of week
//!   is 0-7 where both 0 and 7 are Sunday.
//! - In the day-of-month field, `L` is the last day of the month and `L-n` the day `n` days
//!   before it (`L-1` in a 31-day month is the 30th); `L-n` never matches in a month too short
//!   for it.
//! - Macros: `@yearly`/`@annually`, `@monthly`, `@weekly`, `@daily`/`@midnight`, `@hourly`.
//! - Intervals: `every N seconds|minutes|hours` (singular units too).
//!
//! # Day of month and day of week
//!
//! As in Vixie cron (and so pg_cron): when both fields are restricted, a day matches if EITHER
//! matches, so `0 0 13 * FRI` fires on every 13th and on every Friday. A field counts as
//! unrestricted when its text starts with `*`, so `*/2` counts as unrestricted too and
//! `0 0 */2 * FRI` fires on odd-numbered Fridays only, exactly like Vixie cron.
//!
//! # Time zones and daylight saving
//!
//! Cron fields are read as wall-clock time in the schedule's IANA time zone:
//! - A local time skipped by a spring-forward jump fires once, at the first instant after the
//!   gap: with Europe/Berlin's 02:00→03:00 jump, `30 2 * * *` fires at 03:00 that day, and a
//!   schedule matching several skipped times (`*/15 2 * * *`) or also 03:00 still fires once.
//! - A local time that a fall-back change makes occur twice fires once, at its first
//!   occurrence. This applies to every field pattern, so `0 * * * *` in a zone that falls back
//!   skips the repeated hour; an `every` interval or a UTC schedule has no such gap.
//!
//! Intervals are absolute time, unaffected by daylight saving, and their slots are aligned to the
//! Unix epoch (`every 10 seconds` fires at :00, :10, :20 …), so every scheduler computes the
//! same slots.

use std::fmt;
use std::num::IntErrorKind;

use chrono::{
    DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeDelta, TimeZone, Timelike,
    Utc,
};
use chrono_tz::Tz;

/// The Gregorian calendar repeats every 400 years, so a cron schedule with no slot in that
/// window (such as `0 0 30 2 *`) has none ever, and the search can stop there.
const SEARCH_HORIZON_YEARS: i32 = 400;

/// The longest local-time gap on record is a day (Samoa skipped 30 December 2011); this leaves a
/// margin without letting a broken zone rule loop for long.
const LONGEST_GAP_HOURS: i64 = 48;

/// A parsed schedule with its time zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    rule: Rule,
    time_zone: Tz,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    Calendar(CalendarRule),
    /// Seconds between slots, always positive.
    Interval(i64),
}

/// Why a schedule was rejected, naming the field at fault when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleError {
    field: Option<(usize, Field)>,
    reason: String,
}

impl ScheduleError {
    fn new(reason: impl Into<String>) -> Self {
        ScheduleError {
            field: None,
            reason: reason.into(),
        }
    }

    /// The 1-based position of the bad cron field as written (in a six-field schedule the
    /// seconds field is 1), or `None` when the error is not about one field.
    pub fn field_position(&self) -> Option<usize> {
        self.field.map(|(position, _)| position)
    }

    /// The name of the bad cron field, such as `"day of week"`.
    pub fn field_name(&self) -> Option<&'static str> {
        self.field.map(|(_, field)| field.name())
    }
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field {
            Some((position, field)) => {
                write!(f, "field {position} ({}): {}", field.name(), self.reason)
            }
            None => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for ScheduleError {}

/// An IANA time zone by its case-sensitive name, such as `"UTC"` or `"Europe/Berlin"`.
pub fn parse_time_zone(name: &str) -> Result<Tz, ScheduleError> {
    name.parse::<Tz>()
        .map_err(|_| ScheduleError::new(format!("unknown time zone \"{name}\"")))
}

impl Schedule {
    /// Parses `text` (see the module docs for the syntax) for the IANA zone `time_zone`, such as
    /// `"UTC"` or `"Europe/Berlin"`; zone names are case-sensitive.
    pub fn parse(text: &str, time_zone: &str) -> Result<Schedule, ScheduleError> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let rule = match words.as_slice() {
            [first, ..] if first.starts_with('@') => Rule::Calendar(parse_macro(text.trim())?),
            [first, ..] if first.eq_ignore_ascii_case("every") => {
                Rule::Interval(parse_interval(&words)?)
            }
            _ => Rule::Calendar(CalendarRule::parse(&words)?),
        };
        Ok(Schedule {
            rule,
            time_zone: parse_time_zone(time_zone)?,
        })
    }

    /// True when a slot can fall on a second other than :00, so the caller must check more often
    /// than once a minute: a six-field schedule whose seconds field is not just 0, or an interval
    /// that is not a whole number of minutes.
    pub fn has_seconds(&self) -> bool {
        match &self.rule {
            Rule::Calendar(calendar) => calendar.seconds != Values::only(0),
            Rule::Interval(seconds) => seconds % 60 != 0,
        }
    }

    /// The first slot strictly after `after`, or `None` when there is none (an impossible date
    /// such as 30 February, or beyond the dates chrono can represent).
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match &self.rule {
            Rule::Calendar(calendar) => calendar.next_after(self.time_zone, after),
            Rule::Interval(seconds) => {
                let next = after
                    .timestamp()
                    .div_euclid(*seconds)
                    .checked_add(1)?
                    .checked_mul(*seconds)?;
                DateTime::from_timestamp(next, 0)
            }
        }
    }

    /// The slots after `from_exclusive` up to and including `to_inclusive`, earliest first, at
    /// most `limit` of them, so catching up after a long outage stays bounded.
    pub fn slots_between(
        &self,
        from_exclusive: DateTime<Utc>,
        to_inclusive: DateTime<Utc>,
        limit: usize,
    ) -> Vec<DateTime<Utc>> {
        let mut slots = Vec::new();
        let mut cursor = from_exclusive;
        while slots.len() < limit {
            match self.next_after(cursor) {
                Some(slot) if slot <= to_inclusive => {
                    slots.push(slot);
                    cursor = slot;
                }
                _ => break,
            }
        }
        slots
    }
}

fn parse_macro(text: &str) -> Result<CalendarRule, ScheduleError> {
    let fields = match text.to_ascii_lowercase().as_str() {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        _ => return Err(ScheduleError::new(format!("unknown macro \"{text}\""))),
    };
    let words: Vec<&str> = fields.split_whitespace().collect();
    CalendarRule::parse(&words)
}

/// Parses `every N unit` into seconds.
fn parse_interval(words: &[&str]) -> Result<i64, ScheduleError> {
    let [_, count, unit] = words else {
        return Err(ScheduleError::new(
            "every: expected \"every N seconds|minutes|hours\"",
        ));
    };
    let count = match count.parse::<i64>() {
        Ok(count) if count > 0 => count,
        Ok(_) => return Err(ScheduleError::new("every: interval must be positive")),
        Err(error) => {
            return Err(ScheduleError::new(match error.kind() {
                IntErrorKind::PosOverflow => "every: interval is too large".to_string(),
                IntErrorKind::NegOverflow => "every: interval must be positive".to_string(),
                _ => format!("every: \"{count}\" is not a number"),
            }))
        }
    };
    let unit_seconds = match unit.to_ascii_lowercase().as_str() {
        "second" | "seconds" => 1,
        "minute" | "minutes" => 60,
        "hour" | "hours" => 3600,
        _ => {
            return Err(ScheduleError::new(format!(
                "every: unknown unit \"{unit}\""
            )))
        }
    };
    count
        .checked_mul(unit_seconds)
        .ok_or_else(|| ScheduleError::new("every: interval is too large"))
}

/// A cron field, in the order the fields are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Second,
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

const MONTH_NAMES: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const DAY_NAMES: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Second => "second",
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "day of month",
            Field::Month => "month",
            Field::DayOfWeek => "day of week",
        }
    }

    fn bounds(self) -> (u32, u32) {
        match self {
            Field::Second | Field::Minute => (0, 59),
            Field::Hour => (0, 23),
            Field::DayOfMonth => (1, 31),
            Field::Month => (1, 12),
            Field::DayOfWeek => (0, 7),
        }
    }

    fn named_value(self, name: &str) -> Option<u32> {
        let (names, first_value): (&[&str], u32) = match self {
            Field::Month => (&MONTH_NAMES, 1),
            Field::DayOfWeek => (&DAY_NAMES, 0),
            _ => return None,
        };
        let index = names
            .iter()
            .position(|known| known.eq_ignore_ascii_case(name))?;
        u32::try_from(index).ok().map(|index| index + first_value)
    }

    fn value(self, text: &str, item: &str) -> Result<u32, String> {
        let (min, max) = self.bounds();
        if text.is_empty() {
            return Err(format!("malformed item \"{item}\""));
        }
        if text.bytes().all(|byte| byte.is_ascii_digit()) {
            return match text.parse::<u32>() {
                Ok(value) if (min..=max).contains(&value) => Ok(value),
                _ => Err(format!("{text} is out of range {min}-{max}")),
            };
        }
        match self {
            Field::Month | Field::DayOfWeek => self
                .named_value(text)
                .ok_or_else(|| format!("unknown name \"{text}\"")),
            _ => Err(format!("\"{text}\" is not a number")),
        }
    }

    fn step(self, text: &str) -> Result<u32, String> {
        let (_, max) = self.bounds();
        if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(format!("step \"{text}\" is not a number"));
        }
        match text.parse::<u32>() {
            Ok(step) if (1..=max).contains(&step) => Ok(step),
            _ => Err(format!("step {text} is out of range 1-{max}")),
        }
    }
}

/// A set of small numbers (every field value is below 64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Values(u64);

impl Values {
    fn only(value: u32) -> Values {
        Values(1 << value)
    }

    fn insert(&mut self, value: u32) {
        self.0 |= 1 << value;
    }

    fn contains(self, value: u32) -> bool {
        value < 64 && self.0 & (1 << value) != 0
    }

    fn first_at_or_after(self, from: u32) -> Option<u32> {
        if from >= 64 {
            return None;
        }
        let rest = self.0 & (u64::MAX << from);
        (rest != 0).then(|| rest.trailing_zeros())
    }
}

/// Whether a day must match the day-of-month field, the day-of-week field, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DayRule {
    Both,
    Either,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct CalendarRule {
    seconds: Values,
    minutes: Values,
    hours: Values,
    days_of_month: Values,
    /// Offsets from the month's last day: 0 for `L`, n for `L-n`.
    days_before_last: Values,
    months: Values,
    /// 0 = Sunday … 6 = Saturday; a written 7 is stored as 0.
    days_of_week: Values,
    day_rule: DayRule,
}

/// A field's values, plus the `L` offsets only the day-of-month field can have.
struct FieldValues {
    values: Values,
    days_before_last: Values,
}

const FIVE_FIELDS: [Field; 5] = [
    Field::Minute,
    Field::Hour,
    Field::DayOfMonth,
    Field::Month,
    Field::DayOfWeek,
];
const SIX_FIELDS: [Field; 6] = [
    Field::Second,
    Field::Minute,
    Field::Hour,
    Field::DayOfMonth,
    Field::Month,
    Field::DayOfWeek,
];

impl CalendarRule {
    fn parse(words: &[&str]) -> Result<CalendarRule, ScheduleError> {
        let fields: &[Field] = match words.len() {
            5 => &FIVE_FIELDS,
            6 => &SIX_FIELDS,
            found => {
                return Err(ScheduleError::new(format!(
                    "expected 5 or 6 fields, found {found}"
                )))
            }
        };
        let mut rule = CalendarRule {
            seconds: Values::only(0),
            minutes: Values::default(),
            hours: Values::default(),
            days_of_month: Values::default(),
            days_before_last: Values::default(),
            months: Values::default(),
            days_of_week: Values::default(),
            day_rule: DayRule::Both,
        };
        let mut day_of_month_restricted = false;
        let mut day_of_week_restricted = false;
        for (index, (&text, &field)) in words.iter().zip(fields).enumerate() {
            let parsed = parse_field(text, field).map_err(|reason| ScheduleError {
                field: Some((index + 1, field)),
                reason,
            })?;
            let restricted = !text.starts_with('*');
            match field {
                Field::Second => rule.seconds = parsed.values,
                Field::Minute => rule.minutes = parsed.values,
                Field::Hour => rule.hours = parsed.values,
                Field::DayOfMonth => {
                    rule.days_of_month = parsed.values;
                    rule.days_before_last = parsed.days_before_last;
                    day_of_month_restricted = restricted;
                }
                Field::Month => rule.months = parsed.values,
                Field::DayOfWeek => {
                    rule.days_of_week = parsed.values;
                    day_of_week_restricted = restricted;
                }
            }
        }
        if day_of_month_restricted && day_of_week_restricted {
            rule.day_rule = DayRule::Either;
        }
        Ok(rule)
    }

    fn next_after(&self, time_zone: Tz, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let offset = time_zone.offset_from_utc_datetime(&after.naive_utc()).fix();
        let local_after = after.naive_utc().checked_add_offset(offset)?;
        let mut search_from = local_after
            .with_nanosecond(0)?
            .checked_add_signed(TimeDelta::seconds(1))?;
        let last_year = search_from.year().saturating_add(SEARCH_HORIZON_YEARS);
        loop {
            let local = self.first_match_at_or_after(search_from, last_year)?;
            let instant = fire_instant(time_zone, local)?;
            // A later local time can fire no later than `after` only while `after` is in the second
            // pass through a fall-back overlap: that time fired at its first occurrence already.
            if instant > after {
                return Some(instant);
            }
            search_from = local.checked_add_signed(TimeDelta::seconds(1))?;
        }
    }

    /// The first local date and time at or after `start` that the fields match, searching no
    /// further than the end of `last_year`.
    fn first_match_at_or_after(
        &self,
        start: NaiveDateTime,
        last_year: i32,
    ) -> Option<NaiveDateTime> {
        let (mut year, mut month, mut day) = (start.year(), start.month(), start.day());
        let mut earliest_time = start.time();
        while year <= last_year {
            let Some(matching_month) = self.months.first_at_or_after(month) else {
                (year, month, day, earliest_time) = (year + 1, 1, 1, NaiveTime::MIN);
                continue;
            };
            if matching_month != month {
                (month, day, earliest_time) = (matching_month, 1, NaiveTime::MIN);
            }
            let Some(matching_day) = self.matching_days(year, month)?.first_at_or_after(day) else {
                (month, day, earliest_time) = (month + 1, 1, NaiveTime::MIN);
                continue;
            };
            if matching_day != day {
                (day, earliest_time) = (matching_day, NaiveTime::MIN);
            }
            if let Some(time) = self.first_time_at_or_after(earliest_time) {
                return NaiveDate::from_ymd_opt(year, month, day).map(|date| date.and_time(time));
            }
            (day, earliest_time) = (day + 1, NaiveTime::MIN);
        }
        None
    }

    /// The days of the given month that the day-of-month and day-of-week fields select.
    fn matching_days(&self, year: i32, month: u32) -> Option<Values> {
        let first = NaiveDate::from_ymd_opt(year, month, 1)?;
        let days_in_month = u32::from(first.num_days_in_month());
        let first_weekday = first.weekday().num_days_from_sunday();
        let mut days = Values::default();
        for day in 1..=days_in_month {
            let by_date = self.days_of_month.contains(day)
                || self.days_before_last.contains(days_in_month - day);
            let by_weekday = self.days_of_week.contains((first_weekday + day - 1) % 7);
            let matches = match self.day_rule {
                DayRule::Both => by_date && by_weekday,
                DayRule::Either => by_date || by_weekday,
            };
            if matches {
                days.insert(day);
            }
        }
        Some(days)
    }

    /// The first time of day at or after `from` that the time fields match, if any is left.
    fn first_time_at_or_after(&self, from: NaiveTime) -> Option<NaiveTime> {
        let (mut hour, mut minute, mut second) = (from.hour(), from.minute(), from.second());
        loop {
            let matching_hour = self.hours.first_at_or_after(hour)?;
            if matching_hour != hour {
                (hour, minute, second) = (matching_hour, 0, 0);
            }
            let Some(matching_minute) = self.minutes.first_at_or_after(minute) else {
                (hour, minute, second) = (hour + 1, 0, 0);
                continue;
            };
            if matching_minute != minute {
                (minute, second) = (matching_minute, 0);
            }
            let Some(matching_second) = self.seconds.first_at_or_after(second) else {
                (minute, second) = (minute + 1, 0);
                continue;
            };
            return NaiveTime::from_hms_opt(hour, minute, matching_second);
        }
    }
}

fn parse_field(text: &str, field: Field) -> Result<FieldValues, String> {
    let (min, max) = field.bounds();
    let mut parsed = FieldValues {
        values: Values::default(),
        days_before_last: Values::default(),
    };
    for item in text.split(',') {
        if item.is_empty() {
            return Err("empty list item".to_string());
        }
        if field == Field::DayOfMonth {
            if let Some(offset) = parse_days_before_last(item)? {
                parsed.days_before_last.insert(offset);
                continue;
            }
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(field.step(step)?)),
            None => (item, None),
        };
        let (start, end) = if range == "*" {
            (min, max)
        } else if let Some((start, end)) = range.split_once('-') {
            let (start, end) = (field.value(start, item)?, field.value(end, item)?);
            if start > end {
                return Err(format!("range {range} is reversed"));
            }
            (start, end)
        } else {
            let start = field.value(range, item)?;
            // Many cron dialects accept a step after a single value; read `5/15` as `5-59/15`.
            (start, if step.is_some() { max } else { start })
        };
        let step = step.unwrap_or(1);
        let mut value = start;
        while value <= end {
            // Day of week 7 is Sunday, stored as 0.
            parsed.values.insert(if field == Field::DayOfWeek {
                value % 7
            } else {
                value
            });
            value += step;
        }
    }
    Ok(parsed)
}

/// `L` → `Some(0)`, `L-n` → `Some(n)`, anything else → `None`.
fn parse_days_before_last(item: &str) -> Result<Option<u32>, String> {
    if item.eq_ignore_ascii_case("L") {
        return Ok(Some(0));
    }
    let Some(offset) = item.strip_prefix("L-").or_else(|| item.strip_prefix("l-")) else {
        return Ok(None);
    };
    if offset.is_empty() || !offset.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(format!("malformed item \"{item}\""));
    }
    match offset.parse::<u32>() {
        Ok(offset) if offset <= 30 => Ok(Some(offset)),
        _ => Err(format!("{item} is out of range L-0 to L-30")),
    }
}

/// The instant at which a matching local time fires (see the module docs on daylight saving).
fn fire_instant(time_zone: Tz, local: NaiveDateTime) -> Option<DateTime<Utc>> {
    match time_zone.from_local_datetime(&local).earliest() {
        Some(instant) => Some(instant.with_timezone(&Utc)),
        None => first_instant_after_gap(time_zone, local),
    }
}

/// The first instant whose local time is past the gap that contains `missing`.
fn first_instant_after_gap(time_zone: Tz, missing: NaiveDateTime) -> Option<DateTime<Utc>> {
    let instant_at = |seconds_later: i64| {
        let local = missing.checked_add_signed(TimeDelta::seconds(seconds_later))?;
        time_zone.from_local_datetime(&local).earliest()
    };
    // Hop out of the gap an hour at a time, then bisect back to the second local time resumes:
    // gaps need not end on a whole hour (old local mean time offsets had seconds).
    let mut missing_at = 0;
    let mut present_at = (1..=LONGEST_GAP_HOURS)
        .map(|hours| hours * 3600)
        .find(|&later| instant_at(later).is_some())?;
    while present_at - missing_at > 1 {
        let middle = missing_at + (present_at - missing_at) / 2;
        if instant_at(middle).is_some() {
            present_at = middle;
        } else {
            missing_at = middle;
        }
    }
    instant_at(present_at).map(|instant| instant.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::Schedule;
    use chrono::{DateTime, Utc};

    fn at(text: &str) -> DateTime<Utc> {
        text.parse()
            .unwrap_or_else(|error| panic!("bad test instant {text}: {error}"))
    }

    fn schedule(text: &str, zone: &str) -> Schedule {
        Schedule::parse(text, zone).unwrap_or_else(|error| panic!("{text:?} in {zone}: {error}"))
    }

    /// Each case: schedule, zone, start, and the consecutive slots expected after the start.
    fn assert_next_slots(cases: &[(&str, &str, &str, &[&str])]) {
        for &(text, zone, start, expected) in cases {
            let schedule = schedule(text, zone);
            let mut cursor = at(start);
            for &want in expected {
                assert_eq!(
                    schedule.next_after(cursor),
                    Some(at(want)),
                    "{text:?} in {zone} after {cursor}"
                );
                cursor = at(want);
            }
        }
    }

    /// Each case: schedule, zone, exclusive start, inclusive end, and every slot expected between.
    fn assert_slots_between(cases: &[(&str, &str, &str, &str, &[&str])]) {
        for &(text, zone, from, to, expected) in cases {
            let expected: Vec<DateTime<Utc>> = expected.iter().map(|slot| at(slot)).collect();
            assert_eq!(
                schedule(text, zone).slots_between(at(from), at(to), 100),
                expected,
                "{text:?} in {zone} from {from} to {to}"
            );
        }
    }

    #[test]
    fn invalid_schedules_are_rejected_with_a_message_naming_the_field() {
        let cases: &[(&str, &str, &str, Option<usize>)] = &[
            (
                "0 25 * * *",
                "UTC",
                "field 2 (hour): 25 is out of range 0-23",
                Some(2),
            ),
            (
                "61 * * * *",
                "UTC",
                "field 1 (minute): 61 is out of range 0-59",
                Some(1),
            ),
            (
                "0 0 32 * *",
                "UTC",
                "field 3 (day of month): 32 is out of range 1-31",
                Some(3),
            ),
            (
                "0 0 0 * *",
                "UTC",
                "field 3 (day of month): 0 is out of range 1-31",
                Some(3),
            ),
            (
                "0 0 * 13 *",
                "UTC",
                "field 4 (month): 13 is out of range 1-12",
                Some(4),
            ),
            (
                "0 0 * * 8",
                "UTC",
                "field 5 (day of week): 8 is out of range 0-7",
                Some(5),
            ),
            (
                "60 0 0 * * *",
                "UTC",
                "field 1 (second): 60 is out of range 0-59",
                Some(1),
            ),
            (
                "0 0 24 * * *",
                "UTC",
                "field 3 (hour): 24 is out of range 0-23",
                Some(3),
            ),
            (
                "99999999999 * * * *",
                "UTC",
                "field 1 (minute): 99999999999 is out of range 0-59",
                Some(1),
            ),
            (
                "0 0 * * FUNDAY",
                "UTC",
                "field 5 (day of week): unknown name \"FUNDAY\"",
                Some(5),
            ),
            (
                "0 0 * FOO *",
                "UTC",
                "field 4 (month): unknown name \"FOO\"",
                Some(4),
            ),
            (
                "x * * * *",
                "UTC",
                "field 1 (minute): \"x\" is not a number",
                Some(1),
            ),
            (
                "+5 * * * *",
                "UTC",
                "field 1 (minute): \"+5\" is not a number",
                Some(1),
            ),
            (
                "0 L * * *",
                "UTC",
                "field 2 (hour): \"L\" is not a number",
                Some(2),
            ),
            (
                "*/0 * * * *",
                "UTC",
                "field 1 (minute): step 0 is out of range 1-59",
                Some(1),
            ),
            (
                "0 0 */32 * *",
                "UTC",
                "field 3 (day of month): step 32 is out of range 1-31",
                Some(3),
            ),
            (
                "*/x * * * *",
                "UTC",
                "field 1 (minute): step \"x\" is not a number",
                Some(1),
            ),
            (
                "5-1 * * * *",
                "UTC",
                "field 1 (minute): range 5-1 is reversed",
                Some(1),
            ),
            (
                "0 0 * * FRI-MON",
                "UTC",
                "field 5 (day of week): range FRI-MON is reversed",
                Some(5),
            ),
            (
                "1,,2 * * * *",
                "UTC",
                "field 1 (minute): empty list item",
                Some(1),
            ),
            (
                "1- * * * *",
                "UTC",
                "field 1 (minute): malformed item \"1-\"",
                Some(1),
            ),
            (
                "0 0 L-31 * *",
                "UTC",
                "field 3 (day of month): L-31 is out of range L-0 to L-30",
                Some(3),
            ),
            (
                "0 0 L-x * *",
                "UTC",
                "field 3 (day of month): malformed item \"L-x\"",
                Some(3),
            ),
            ("0 0 * *", "UTC", "expected 5 or 6 fields, found 4", None),
            (
                "0 0 0 * * * *",
                "UTC",
                "expected 5 or 6 fields, found 7",
                None,
            ),
            ("   ", "UTC", "expected 5 or 6 fields, found 0", None),
            ("@reboot", "UTC", "unknown macro \"@reboot\"", None),
            ("@daily 5", "UTC", "unknown macro \"@daily 5\"", None),
            (
                "0 0 * * *",
                "Mars/Olympus",
                "unknown time zone \"Mars/Olympus\"",
                None,
            ),
            ("0 0 * * *", "", "unknown time zone \"\"", None),
            (
                "every 2 fortnights",
                "UTC",
                "every: unknown unit \"fortnights\"",
                None,
            ),
            (
                "every 0 minutes",
                "UTC",
                "every: interval must be positive",
                None,
            ),
            (
                "every -5 seconds",
                "UTC",
                "every: interval must be positive",
                None,
            ),
            (
                "every ten seconds",
                "UTC",
                "every: \"ten\" is not a number",
                None,
            ),
            (
                "every 5",
                "UTC",
                "every: expected \"every N seconds|minutes|hours\"",
                None,
            ),
            (
                "every 99999999999999999999 seconds",
                "UTC",
                "every: interval is too large",
                None,
            ),
            (
                "every 9223372036854775807 hours",
                "UTC",
                "every: interval is too large",
                None,
            ),
        ];
        for &(text, zone, message, position) in cases {
            let error = Schedule::parse(text, zone).expect_err(text);
            assert_eq!(error.to_string(), message, "{text:?} in {zone:?}");
            assert_eq!(error.field_position(), position, "{text:?}");
        }
    }

    #[test]
    fn an_error_names_its_field_and_is_a_std_error() {
        let error = Schedule::parse("0 0 * * FUNDAY", "UTC").expect_err("bad day name");
        assert_eq!(error.field_name(), Some("day of week"));
        let as_std: &dyn std::error::Error = &error;
        assert_eq!(
            as_std.to_string(),
            "field 5 (day of week): unknown name \"FUNDAY\""
        );
        assert_eq!(
            Schedule::parse("every 1 day", "UTC")
                .expect_err("bad unit")
                .field_name(),
            None
        );
    }

    #[test]
    fn fields_ranges_steps_and_lists() {
        assert_next_slots(&[
            (
                "*/15 * * * *",
                "UTC",
                "2026-05-01T10:07:00Z",
                &["2026-05-01T10:15:00Z", "2026-05-01T10:30:00Z"],
            ),
            (
                "10-40/10 * * * *",
                "UTC",
                "2026-05-01T10:35:00Z",
                &["2026-05-01T10:40:00Z", "2026-05-01T11:10:00Z"],
            ),
            (
                "1,2,5-7 * * * *",
                "UTC",
                "2026-05-01T10:02:00Z",
                &[
                    "2026-05-01T10:05:00Z",
                    "2026-05-01T10:06:00Z",
                    "2026-05-01T10:07:00Z",
                    "2026-05-01T11:01:00Z",
                ],
            ),
            (
                "5/20 * * * *",
                "UTC",
                "2026-05-01T10:45:00Z",
                &["2026-05-01T11:05:00Z", "2026-05-01T11:25:00Z"],
            ),
            (
                "0 22-23,0-1 * * *",
                "UTC",
                "2026-05-01T01:00:00Z",
                &[
                    "2026-05-01T22:00:00Z",
                    "2026-05-01T23:00:00Z",
                    "2026-05-02T00:00:00Z",
                ],
            ),
            (
                "  0\t12  * * *  ",
                "UTC",
                "2026-05-01T12:00:00Z",
                &["2026-05-02T12:00:00Z"],
            ),
            (
                "0 0 1 1 *",
                "UTC",
                "2026-12-31T23:59:59Z",
                &["2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"],
            ),
            (
                "* * * * *",
                "UTC",
                "2026-05-01T10:00:00.500Z",
                &["2026-05-01T10:01:00Z"],
            ),
            // Strictly after: a slot equal to the start is not returned again.
            (
                "0 12 * * *",
                "UTC",
                "2026-05-01T12:00:00Z",
                &["2026-05-02T12:00:00Z"],
            ),
        ]);
    }

    #[test]
    fn seconds_field() {
        assert_next_slots(&[
            (
                "*/15 * * * * *",
                "UTC",
                "2026-05-01T10:00:07Z",
                &[
                    "2026-05-01T10:00:15Z",
                    "2026-05-01T10:00:30Z",
                    "2026-05-01T10:00:45Z",
                    "2026-05-01T10:01:00Z",
                ],
            ),
            (
                "30 0 9 * * *",
                "UTC",
                "2026-05-01T09:00:30Z",
                &["2026-05-02T09:00:30Z"],
            ),
            (
                "*/10 * * * * *",
                "UTC",
                "2026-05-01T10:00:09.999Z",
                &["2026-05-01T10:00:10Z"],
            ),
            (
                "59 59 23 31 12 *",
                "UTC",
                "2026-06-01T00:00:00Z",
                &["2026-12-31T23:59:59Z", "2027-12-31T23:59:59Z"],
            ),
        ]);
    }

    #[test]
    fn has_seconds_tells_whether_slots_fall_between_whole_minutes() {
        let cases = [
            ("*/15 * * * * *", true),
            ("0 * * * * *", false),
            ("*/5 * * * *", false),
            ("@hourly", false),
            ("every 10 seconds", true),
            ("every 90 seconds", true),
            ("every 120 seconds", false),
            ("every 5 minutes", false),
        ];
        for (text, expected) in cases {
            assert_eq!(schedule(text, "UTC").has_seconds(), expected, "{text}");
        }
    }

    #[test]
    fn last_day_of_month() {
        assert_next_slots(&[
            (
                "0 0 L * *",
                "UTC",
                "2026-01-15T00:00:00Z",
                &[
                    "2026-01-31T00:00:00Z",
                    "2026-02-28T00:00:00Z",
                    "2026-03-31T00:00:00Z",
                    "2026-04-30T00:00:00Z",
                ],
            ),
            (
                "0 0 L 2 *",
                "UTC",
                "2027-03-01T00:00:00Z",
                &["2028-02-29T00:00:00Z", "2029-02-28T00:00:00Z"],
            ),
            (
                "0 0 l * *",
                "UTC",
                "2028-02-01T00:00:00Z",
                &["2028-02-29T00:00:00Z"],
            ),
            (
                "0 0 L-2 * *",
                "UTC",
                "2026-01-01T00:00:00Z",
                &[
                    "2026-01-29T00:00:00Z",
                    "2026-02-26T00:00:00Z",
                    "2026-03-29T00:00:00Z",
                    "2026-04-28T00:00:00Z",
                ],
            ),
            (
                "0 0 L-1 2 *",
                "UTC",
                "2028-01-01T00:00:00Z",
                &["2028-02-28T00:00:00Z", "2029-02-27T00:00:00Z"],
            ),
            (
                "0 0 1,L * *",
                "UTC",
                "2026-01-01T00:00:00Z",
                &[
                    "2026-01-31T00:00:00Z",
                    "2026-02-01T00:00:00Z",
                    "2026-02-28T00:00:00Z",
                ],
            ),
            // L-30 is the 1st of a 31-day month and never matches in shorter ones.
            (
                "0 0 L-30 * *",
                "UTC",
                "2026-01-02T00:00:00Z",
                &["2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"],
            ),
        ]);
    }

    #[test]
    fn month_and_day_names_in_any_case() {
        assert_next_slots(&[
            // 1 May 2026 is a Friday.
            (
                "0 9 * * MON-FRI",
                "UTC",
                "2026-05-01T09:00:00Z",
                &["2026-05-04T09:00:00Z"],
            ),
            (
                "0 9 * * mon-Fri",
                "UTC",
                "2026-05-01T09:00:00Z",
                &["2026-05-04T09:00:00Z"],
            ),
            (
                "0 0 1 jan,Jul *",
                "UTC",
                "2026-02-01T00:00:00Z",
                &["2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z"],
            ),
            (
                "0 0 1 MAR-MAY/2 *",
                "UTC",
                "2026-02-01T00:00:00Z",
                &[
                    "2026-03-01T00:00:00Z",
                    "2026-05-01T00:00:00Z",
                    "2027-03-01T00:00:00Z",
                ],
            ),
            (
                "0 0 * * SUN",
                "UTC",
                "2026-05-01T00:00:00Z",
                &["2026-05-03T00:00:00Z"],
            ),
            (
                "0 0 * * 0",
                "UTC",
                "2026-05-01T00:00:00Z",
                &["2026-05-03T00:00:00Z"],
            ),
            (
                "0 0 * * 7",
                "UTC",
                "2026-05-01T00:00:00Z",
                &["2026-05-03T00:00:00Z", "2026-05-10T00:00:00Z"],
            ),
            (
                "0 0 * * 5-7",
                "UTC",
                "2026-05-01T00:00:00Z",
                &[
                    "2026-05-02T00:00:00Z",
                    "2026-05-03T00:00:00Z",
                    "2026-05-08T00:00:00Z",
                ],
            ),
        ]);
    }

    #[test]
    fn restricted_day_of_month_and_day_of_week_match_either() {
        assert_next_slots(&[
            // April 2026: the 13th is a Monday, the Fridays are the 3rd, 10th, 17th and 24th.
            (
                "0 0 13 * FRI",
                "UTC",
                "2026-04-10T00:00:00Z",
                &[
                    "2026-04-13T00:00:00Z",
                    "2026-04-17T00:00:00Z",
                    "2026-04-24T00:00:00Z",
                    "2026-05-01T00:00:00Z",
                    "2026-05-08T00:00:00Z",
                    "2026-05-13T00:00:00Z",
                ],
            ),
            (
                "0 0 13 * *",
                "UTC",
                "2026-04-10T00:00:00Z",
                &["2026-04-13T00:00:00Z", "2026-05-13T00:00:00Z"],
            ),
            (
                "0 0 * * FRI",
                "UTC",
                "2026-04-10T00:00:00Z",
                &["2026-04-17T00:00:00Z", "2026-04-24T00:00:00Z"],
            ),
            (
                "0 0 L * FRI",
                "UTC",
                "2026-04-24T00:00:00Z",
                &["2026-04-30T00:00:00Z", "2026-05-01T00:00:00Z"],
            ),
            // A field starting with `*` is unrestricted, as in Vixie cron, so both must match:
            // odd-numbered Fridays.
            (
                "0 0 */2 * FRI",
                "UTC",
                "2026-04-10T00:00:00Z",
                &[
                    "2026-04-17T00:00:00Z",
                    "2026-05-01T00:00:00Z",
                    "2026-05-15T00:00:00Z",
                    "2026-05-29T00:00:00Z",
                ],
            ),
        ]);
    }

    #[test]
    fn macros() {
        assert_next_slots(&[
            (
                "@yearly",
                "UTC",
                "2026-05-01T10:00:00Z",
                &["2027-01-01T00:00:00Z"],
            ),
            (
                "@annually",
                "UTC",
                "2026-05-01T10:00:00Z",
                &["2027-01-01T00:00:00Z"],
            ),
            (
                "@monthly",
                "UTC",
                "2026-05-01T10:00:00Z",
                &["2026-06-01T00:00:00Z"],
            ),
            (
                "@weekly",
                "UTC",
                "2026-05-01T10:00:00Z",
                &["2026-05-03T00:00:00Z", "2026-05-10T00:00:00Z"],
            ),
            (
                "@daily",
                "UTC",
                "2026-05-01T10:00:00Z",
                &["2026-05-02T00:00:00Z"],
            ),
            (
                "@midnight",
                "UTC",
                "2026-05-01T10:00:00Z",
                &["2026-05-02T00:00:00Z"],
            ),
            (
                "@hourly",
                "UTC",
                "2026-05-01T10:00:00Z",
                &["2026-05-01T11:00:00Z"],
            ),
            (
                " @DAILY ",
                "UTC",
                "2026-05-01T10:00:00Z",
                &["2026-05-02T00:00:00Z"],
            ),
            (
                "@daily",
                "Europe/Berlin",
                "2026-05-01T10:00:00Z",
                &["2026-05-01T22:00:00Z"],
            ),
        ]);
    }

    #[test]
    fn intervals_are_aligned_to_the_unix_epoch() {
        assert_next_slots(&[
            (
                "every 10 seconds",
                "UTC",
                "2026-05-01T10:00:03Z",
                &[
                    "2026-05-01T10:00:10Z",
                    "2026-05-01T10:00:20Z",
                    "2026-05-01T10:00:30Z",
                ],
            ),
            (
                "every 1 second",
                "UTC",
                "2026-05-01T10:00:03.250Z",
                &["2026-05-01T10:00:04Z"],
            ),
            (
                "every 1 minute",
                "UTC",
                "2026-05-01T10:00:59.500Z",
                &["2026-05-01T10:01:00Z"],
            ),
            (
                "every 7 minutes",
                "UTC",
                "1970-01-01T00:00:00Z",
                &["1970-01-01T00:07:00Z", "1970-01-01T00:14:00Z"],
            ),
            (
                "every 7 minutes",
                "UTC",
                "2026-05-01T00:00:00Z",
                &["2026-05-01T00:02:00Z", "2026-05-01T00:09:00Z"],
            ),
            (
                "EVERY 1 Hour",
                "UTC",
                "2026-05-01T10:30:00Z",
                &["2026-05-01T11:00:00Z"],
            ),
            (
                "every 10 seconds",
                "UTC",
                "1969-12-31T23:59:55Z",
                &["1970-01-01T00:00:00Z"],
            ),
            // Absolute time: an hour apart across Berlin's spring and autumn changes alike.
            (
                "every 1 hour",
                "Europe/Berlin",
                "2026-03-29T00:30:00Z",
                &["2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"],
            ),
            (
                "every 1 hour",
                "Europe/Berlin",
                "2026-10-25T00:30:00Z",
                &["2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"],
            ),
        ]);
    }

    #[test]
    fn berlin_spring_forward_fires_skipped_times_once_when_the_gap_ends() {
        // 29 March 2026: 02:00 CET (01:00 UTC) jumps to 03:00 CEST.
        assert_next_slots(&[
            (
                "30 2 * * *",
                "Europe/Berlin",
                "2026-03-28T01:30:00Z",
                &["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"],
            ),
            (
                "0 3 * * *",
                "Europe/Berlin",
                "2026-03-28T02:00:00Z",
                &["2026-03-29T01:00:00Z", "2026-03-30T01:00:00Z"],
            ),
            (
                "*/15 2 * * *",
                "Europe/Berlin",
                "2026-03-28T12:00:00Z",
                &["2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"],
            ),
            (
                "30 30 2 * * *",
                "Europe/Berlin",
                "2026-03-28T12:00:00Z",
                &["2026-03-29T01:00:00Z", "2026-03-30T00:30:30Z"],
            ),
        ]);
        assert_slots_between(&[(
            "*/30 * * * *",
            "Europe/Berlin",
            "2026-03-29T00:00:00Z",
            "2026-03-29T02:00:00Z",
            &[
                "2026-03-29T00:30:00Z",
                "2026-03-29T01:00:00Z",
                "2026-03-29T01:30:00Z",
                "2026-03-29T02:00:00Z",
            ],
        )]);
    }

    #[test]
    fn berlin_fall_back_fires_repeated_times_once_at_their_first_occurrence() {
        // 25 October 2026: 03:00 CEST (01:00 UTC) falls back to 02:00 CET, so 02:30 local is
        // both 00:30 and 01:30 UTC.
        assert_next_slots(&[
            (
                "30 2 * * *",
                "Europe/Berlin",
                "2026-10-24T12:00:00Z",
                &["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"],
            ),
            // Starting inside the second pass, the repeated 02:30 is not due again.
            (
                "30 2 * * *",
                "Europe/Berlin",
                "2026-10-25T01:00:00Z",
                &["2026-10-26T01:30:00Z"],
            ),
            (
                "0 3 * * *",
                "Europe/Berlin",
                "2026-10-25T01:45:00Z",
                &["2026-10-25T02:00:00Z"],
            ),
            (
                "0 0 9 * * *",
                "Europe/Berlin",
                "2026-10-25T00:00:00Z",
                &["2026-10-25T08:00:00Z"],
            ),
        ]);
        assert_slots_between(&[
            (
                "*/30 * * * *",
                "Europe/Berlin",
                "2026-10-24T23:00:00Z",
                "2026-10-25T02:30:00Z",
                &[
                    "2026-10-24T23:30:00Z",
                    "2026-10-25T00:00:00Z",
                    "2026-10-25T00:30:00Z",
                    "2026-10-25T02:00:00Z",
                    "2026-10-25T02:30:00Z",
                ],
            ),
            (
                "@hourly",
                "Europe/Berlin",
                "2026-10-24T23:00:00Z",
                "2026-10-25T03:00:00Z",
                &[
                    "2026-10-25T00:00:00Z",
                    "2026-10-25T02:00:00Z",
                    "2026-10-25T03:00:00Z",
                ],
            ),
        ]);
    }

    #[test]
    fn new_york_daylight_saving_changes() {
        // 8 March 2026: 02:00 EST jumps to 03:00 EDT (07:00 UTC). 1 November 2026: 02:00 EDT
        // falls back to 01:00 EST, so 01:30 local is both 05:30 and 06:30 UTC.
        assert_next_slots(&[
            (
                "30 2 * * *",
                "America/New_York",
                "2026-03-07T12:00:00Z",
                &["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"],
            ),
            (
                "30 1 * * *",
                "America/New_York",
                "2026-10-31T12:00:00Z",
                &["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"],
            ),
            (
                "0 9 * * *",
                "America/New_York",
                "2026-07-01T00:00:00Z",
                &["2026-07-01T13:00:00Z"],
            ),
            (
                "0 9 * * *",
                "America/New_York",
                "2026-12-01T00:00:00Z",
                &["2026-12-01T14:00:00Z"],
            ),
        ]);
    }

    #[test]
    fn slots_between_is_bounded_and_earliest_first() {
        let every_ten_seconds = schedule("every 10 seconds", "UTC");
        let (from, to) = (at("2026-05-01T10:00:00Z"), at("2026-05-01T11:00:00Z"));
        let first_five = every_ten_seconds.slots_between(from, to, 5);
        let expected_first_five: Vec<DateTime<Utc>> =
            ["10:00:10", "10:00:20", "10:00:30", "10:00:40", "10:00:50"]
                .iter()
                .map(|time| at(&format!("2026-05-01T{time}Z")))
                .collect();
        assert_eq!(first_five, expected_first_five);

        let whole_hour = every_ten_seconds.slots_between(from, to, 1000);
        assert_eq!(whole_hour.len(), 360);
        assert_eq!(whole_hour.first(), Some(&at("2026-05-01T10:00:10Z")));
        assert_eq!(whole_hour.last(), Some(&to));

        assert!(every_ten_seconds.slots_between(from, to, 0).is_empty());
        assert!(every_ten_seconds.slots_between(to, from, 10).is_empty());
        assert!(schedule("0 0 30 2 *", "UTC")
            .slots_between(from, to, 10)
            .is_empty());
    }

    #[test]
    fn impossible_dates_have_no_next_slot() {
        for text in [
            "0 0 30 2 *",
            "0 0 31 4,6,9,11 *",
            "0 0 L-30 2 *",
            "0 0 0 31 2 *",
        ] {
            assert_eq!(
                schedule(text, "Europe/Berlin").next_after(at("2026-05-01T00:00:00Z")),
                None,
                "{text}"
            );
        }
    }

    #[test]
    fn rare_dates_are_found_years_ahead() {
        assert_next_slots(&[
            // 2100 is not a leap year.
            (
                "0 0 29 2 *",
                "UTC",
                "2096-03-01T00:00:00Z",
                &["2104-02-29T00:00:00Z"],
            ),
            // The 1st or 29th of February on a Monday (both fields count, the first starting
            // with `*`): eleven years apart here.
            (
                "0 0 */28 2 MON",
                "UTC",
                "2027-02-02T00:00:00Z",
                &["2038-02-01T00:00:00Z"],
            ),
        ]);
    }

    #[test]
    fn the_end_of_representable_time_ends_the_schedule_without_panicking() {
        let last = DateTime::<Utc>::MAX_UTC;
        for (text, zone) in [
            ("* * * * * *", "UTC"),
            ("* * * * *", "Asia/Tokyo"),
            ("* * * * *", "America/New_York"),
            ("every 1 second", "UTC"),
        ] {
            assert_eq!(
                schedule(text, zone).next_after(last),
                None,
                "{text} in {zone}"
            );
        }
    }
}
