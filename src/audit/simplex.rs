//! A small dense two-phase simplex for the auditor's linear programs ([`super::flow`]).
//!
//! The programs have a few hundred variables and a few dozen rows with small integer
//! coefficients, so a dense tableau in `f64` with Bland's rule (which cannot cycle) is exact
//! enough and fast: a general solver crate would pull in sparse-matrix libraries for nothing.

/// How a row's left side relates to its right side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// `a·x <= b`.
    AtMost,
    /// `a·x = b`.
    Equal,
    /// `a·x >= b`.
    AtLeast,
}

/// One row: `Σ coefficient × x[variable]` related to `rhs`.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `(variable, coefficient)`; a variable may appear more than once (the terms add up).
    pub terms: Vec<(usize, f64)>,
    /// The relation.
    pub relation: Relation,
    /// The right side.
    pub rhs: f64,
}

/// The end of a maximisation.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The optimum and a point attaining it.
    Optimal {
        /// The objective's value at `point`.
        value: f64,
        /// One value per variable.
        point: Vec<f64>,
    },
    /// No point satisfies the rows.
    Infeasible,
    /// The objective grows without bound.
    Unbounded,
}

/// Below this, a value is zero.
const EPS: f64 = 1e-9;

struct Tableau {
    /// `rows × (cols + 1)`, the last column the right side.
    cells: Vec<Vec<f64>>,
    /// The basic variable of each row.
    basis: Vec<usize>,
    /// Reduced costs per column, and minus the objective's value in the last column.
    objective: Vec<f64>,
    cols: usize,
}

impl Tableau {
    fn pivot(&mut self, row: usize, col: usize) {
        let p = self.cells[row][col];
        for v in &mut self.cells[row] {
            *v /= p;
        }
        let pivot_row = self.cells[row].clone();
        for (r, cells) in self.cells.iter_mut().enumerate() {
            let f = cells[col];
            if r != row && f.abs() > EPS {
                for (v, p) in cells.iter_mut().zip(&pivot_row) {
                    *v -= f * p;
                }
            }
        }
        let f = self.objective[col];
        if f.abs() > EPS {
            for (v, p) in self.objective.iter_mut().zip(&pivot_row) {
                *v -= f * p;
            }
        }
        self.basis[row] = col;
    }

    /// Pivot until no column in `allowed` improves the objective. `false` when one improves
    /// it without bound. Bland's rule: the lowest improving column enters; among rows tied on
    /// the ratio, the one whose basic variable is lowest leaves.
    fn optimise(&mut self, allowed: usize) -> bool {
        loop {
            let Some(col) = (0..allowed).find(|&j| self.objective[j] > EPS) else { return true };
            let mut leave: Option<(usize, f64)> = None;
            for (r, cells) in self.cells.iter().enumerate() {
                let a = cells[col];
                if a > EPS {
                    let ratio = cells[self.cols] / a;
                    let better = match leave {
                        None => true,
                        Some((l, best)) => ratio < best - EPS || (ratio <= best + EPS && self.basis[r] < self.basis[l]),
                    };
                    if better {
                        leave = Some((r, ratio));
                    }
                }
            }
            let Some((row, _)) = leave else { return false };
            self.pivot(row, col);
        }
    }

    /// Set the objective to maximising `costs` (zero past its end) for the current basis.
    fn set_objective(&mut self, costs: &[f64]) {
        let cost = |j: usize| costs.get(j).copied().unwrap_or(0.0);
        let mut objective: Vec<f64> = (0..self.cols).map(cost).collect();
        objective.push(0.0);
        for (cells, &b) in self.cells.iter().zip(&self.basis) {
            let cb = cost(b);
            if cb != 0.0 {
                for (o, v) in objective.iter_mut().zip(cells) {
                    *o -= cb * v;
                }
            }
        }
        self.objective = objective;
    }
}

/// Maximise `Σ objective[j] × x[j]` over `x >= 0` (one entry per variable) subject to `rows`.
pub fn maximize(objective: &[f64], rows: &[Row]) -> Outcome {
    let n = objective.len();
    let m = rows.len();
    // Rows with a non-negative right side; a slack or surplus column per inequality, then an
    // artificial column per row that has no slack to start the basis with.
    let slack_cols = rows.iter().filter(|r| r.relation != Relation::Equal).count();
    let mut artificial_rows = Vec::new();
    let mut normal: Vec<(Vec<f64>, Relation, f64)> = Vec::with_capacity(m);
    for row in rows {
        let mut dense = vec![0.0; n];
        for &(j, a) in &row.terms {
            dense[j] += a;
        }
        let (relation, rhs) = if row.rhs < 0.0 {
            dense.iter_mut().for_each(|v| *v = -*v);
            let flipped = match row.relation {
                Relation::AtMost => Relation::AtLeast,
                Relation::Equal => Relation::Equal,
                Relation::AtLeast => Relation::AtMost,
            };
            (flipped, -row.rhs)
        } else {
            (row.relation, row.rhs)
        };
        normal.push((dense, relation, rhs));
    }
    for (r, (_, relation, _)) in normal.iter().enumerate() {
        if *relation != Relation::AtMost {
            artificial_rows.push(r);
        }
    }
    let first_artificial = n + slack_cols;
    let cols = first_artificial + artificial_rows.len();
    let mut cells = Vec::with_capacity(m);
    let mut basis = Vec::with_capacity(m);
    let mut slack = n;
    for (r, (dense, relation, rhs)) in normal.into_iter().enumerate() {
        let mut row = dense;
        row.resize(cols + 1, 0.0);
        row[cols] = rhs;
        match relation {
            Relation::AtMost => {
                row[slack] = 1.0;
                basis.push(slack);
                slack += 1;
            }
            Relation::AtLeast => {
                row[slack] = -1.0;
                slack += 1;
            }
            Relation::Equal => {}
        }
        if let Some(k) = artificial_rows.iter().position(|&a| a == r) {
            row[first_artificial + k] = 1.0;
            basis.push(first_artificial + k);
        }
        cells.push(row);
    }
    let mut t = Tableau { cells, basis, objective: Vec::new(), cols };

    // Phase 1: drive the artificial columns to zero.
    if !artificial_rows.is_empty() {
        let mut costs = vec![0.0; cols];
        costs[first_artificial..].iter_mut().for_each(|c| *c = -1.0);
        t.set_objective(&costs);
        t.optimise(cols);
        if -t.objective[cols] < -1e-7 {
            return Outcome::Infeasible;
        }
        // Pivot the artificial columns still basic (at zero) out; a row with nothing else
        // left is redundant and goes.
        let mut r = 0;
        while r < t.cells.len() {
            if t.basis[r] >= first_artificial {
                match (0..first_artificial).find(|&j| t.cells[r][j].abs() > EPS) {
                    Some(j) => t.pivot(r, j),
                    None => {
                        t.cells.remove(r);
                        t.basis.remove(r);
                        continue;
                    }
                }
            }
            r += 1;
        }
    }

    // Phase 2: the real objective, the artificial columns barred.
    t.set_objective(objective);
    if !t.optimise(first_artificial) {
        return Outcome::Unbounded;
    }
    let mut point = vec![0.0; n];
    for (cells, &b) in t.cells.iter().zip(&t.basis) {
        if b < n {
            point[b] = cells[cols];
        }
    }
    Outcome::Optimal { value: -t.objective[cols], point }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(terms: &[(usize, f64)], relation: Relation, rhs: f64) -> Row {
        Row { terms: terms.to_vec(), relation, rhs }
    }

    fn optimum(outcome: &Outcome) -> f64 {
        match outcome {
            Outcome::Optimal { value, .. } => *value,
            other => panic!("expected an optimum, got {other:?}"),
        }
    }

    #[test]
    fn solves_a_textbook_program() {
        // max 3x + 5y; x <= 4; 2y <= 12; 3x + 2y <= 18: optimum 36 at (2, 6).
        let rows = [
            row(&[(0, 1.0)], Relation::AtMost, 4.0),
            row(&[(1, 2.0)], Relation::AtMost, 12.0),
            row(&[(0, 3.0), (1, 2.0)], Relation::AtMost, 18.0),
        ];
        let outcome = maximize(&[3.0, 5.0], &rows);
        assert_eq!(optimum(&outcome), 36.0);
        let Outcome::Optimal { point, .. } = outcome else { unreachable!() };
        assert_eq!(point, vec![2.0, 6.0]);
    }

    #[test]
    fn equalities_and_lower_bounds_need_phase_one() {
        // max x + y; x + y = 5; x >= 2; y >= 1; x - y <= 1: optimum 5, and min-style rows hold.
        let rows = [
            row(&[(0, 1.0), (1, 1.0)], Relation::Equal, 5.0),
            row(&[(0, 1.0)], Relation::AtLeast, 2.0),
            row(&[(1, 1.0)], Relation::AtLeast, 1.0),
            row(&[(0, 1.0), (1, -1.0)], Relation::AtMost, 1.0),
        ];
        assert_eq!(optimum(&maximize(&[1.0, 1.0], &rows)), 5.0);
        // max x with the same rows: x - y <= 1 and x + y = 5 give x <= 3.
        assert_eq!(optimum(&maximize(&[1.0, 0.0], &rows)), 3.0);
    }

    #[test]
    fn a_negative_right_side_is_flipped() {
        // -x <= -3 is x >= 3; max -x gives -3.
        let rows = [row(&[(0, -1.0)], Relation::AtMost, -3.0)];
        assert_eq!(optimum(&maximize(&[-1.0], &rows)), -3.0);
    }

    #[test]
    fn reports_infeasible_and_unbounded_programs() {
        let rows = [row(&[(0, 1.0)], Relation::AtMost, 1.0), row(&[(0, 1.0)], Relation::AtLeast, 2.0)];
        assert_eq!(maximize(&[1.0], &rows), Outcome::Infeasible);
        let rows = [row(&[(0, 1.0), (1, -1.0)], Relation::AtMost, 1.0)];
        assert_eq!(maximize(&[1.0, 0.0], &rows), Outcome::Unbounded);
    }

    #[test]
    fn redundant_equalities_are_dropped() {
        // The same equality twice, and a degenerate vertex at the origin.
        let rows = [
            row(&[(0, 1.0), (1, 1.0)], Relation::Equal, 2.0),
            row(&[(0, 2.0), (1, 2.0)], Relation::Equal, 4.0),
            row(&[(0, 1.0)], Relation::AtMost, 0.0),
        ];
        assert_eq!(optimum(&maximize(&[0.0, 3.0], &rows)), 6.0);
    }
}
