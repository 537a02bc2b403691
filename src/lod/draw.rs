//! Draws a LoD the way the reference documents do: one line of lengths per level, each
//! length above the first element of its sequence, over one cell per element.
//!
//! ```text
//! 3           1 2
//! 3   2  4    1 2  3
//! ||| || |||| | || |||
//! ```

use super::Lod;

impl Lod {
    /// The drawing of this LoD, with `cell(e)` drawn for element `e` (an absolute element
    /// index), each line cut to `max_width` columns. A 0-level LoD draws `rows` cells.
    ///
    /// ```
    /// use lodtensor::Lod;
    ///
    /// let lod = Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]])?;
    /// let picture = lod.draw(3, &|_| "|".to_owned(), 80);
    /// assert_eq!(picture, "3           1 2\n3   2  4    1 2  3\n||| || |||| | || |||\n");
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn draw(&self, rows: usize, cell: &dyn Fn(usize) -> String, max_width: usize) -> String {
        draw(self, rows, cell, max_width)
    }
}

fn draw(lod: &Lod, rows: usize, cell: &dyn Fn(usize) -> String, max_width: usize) -> String {
    let levels = lod.num_levels();
    if levels == 0 {
        let line: String = (0..rows).map(cell).collect();
        return cut(&line, max_width) + "\n";
    }
    let offsets = lod.offsets();
    let lengths = lod.lengths();
    let blocks = lengths[levels - 1].len();
    // labels[k][b]: the lengths of level-k sequences whose first element opens block b (the
    // b-th last-level sequence); empty sequences share the block that follows them.
    let mut labels = vec![vec![Vec::new(); blocks + 1]; levels];
    for (k, level_lengths) in lengths.iter().enumerate() {
        for (i, length) in level_lengths.iter().enumerate() {
            let index = offsets[k..levels - 1]
                .iter()
                .fold(i, |index, o| (o[index] - o[0]) as usize);
            labels[k][index].push(length.to_string());
        }
    }
    let last = &offsets[levels - 1];
    let mut lines = vec![String::new(); levels + 1];
    for b in 0..=blocks {
        let cells: String = if b < blocks {
            (last[b] as usize..last[b + 1] as usize).map(cell).collect()
        } else {
            String::new()
        };
        let texts: Vec<String> = labels.iter().map(|l| l[b].join(" ")).collect();
        let width = texts
            .iter()
            .map(|t| t.chars().count())
            .chain([cells.chars().count()])
            .max()
            .unwrap_or(0);
        if width == 0 {
            continue;
        }
        for (line, text) in lines.iter_mut().zip(texts.iter().chain([&cells])) {
            line.push_str(text);
            line.extend(std::iter::repeat_n(' ', width + 1 - text.chars().count()));
        }
    }
    lines
        .iter()
        .map(|l| cut(l.trim_end(), max_width) + "\n")
        .collect()
}

fn cut(line: &str, max_width: usize) -> String {
    if line.chars().count() <= max_width {
        line.to_owned()
    } else {
        line.chars()
            .take(max_width.saturating_sub(1))
            .chain(['…'])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bars(_: usize) -> String {
        "|".to_owned()
    }

    #[test]
    fn draws_the_reference_example() {
        let lod = Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]]).unwrap();
        let text = draw(&lod, 3, &bars, 200);
        assert_eq!(
            text,
            "3           1 2\n3   2  4    1 2  3\n||| || |||| | || |||\n"
        );
        // A view draws its own part.
        let view = lod.slice_rows(2..3).unwrap();
        assert_eq!(draw(&view, 1, &bars, 200), "2\n2  3\n|| |||\n");
        assert_eq!(draw(&lod, 3, &bars, 8), "3      …\n3   2  …\n||| || …\n");
    }

    #[test]
    fn draws_empty_sequences_and_plain_tensors() {
        let lod = Lod::try_from_lengths(&[vec![0, 2], vec![1, 0]]).unwrap();
        assert_eq!(draw(&lod, 2, &bars, 80), "0 2\n1   0\n|\n");
        assert_eq!(draw(&Lod::default(), 4, &bars, 80), "||||\n");
    }
}
