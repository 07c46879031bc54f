# plot_share.gp -- the n x n share of a ViT-Base layer's multiply-adds against sequence length.
# Called by build/bench/flops with the data it writes:
#   gnuplot -e "datafile='nn_share.dat'; marksfile='nn_share_marks.dat'; outfile='nn_share.svg'" \
#           bench/plot_share.gp
# (add term_png=1 to the -e list for a PNG instead of the SVG)
# datafile: "n share_percent" rows (n = 64..8192, d = 768); marksfile: "n share label" rows for
# the write-up's two sizes (224 px: n = 197, 1024 px: n = 4097).
if (!exists("datafile")) datafile = 'bench/results/nn_share.dat'
if (!exists("marksfile")) marksfile = 'bench/results/nn_share_marks.dat'
if (!exists("outfile")) outfile = 'bench/results/nn_share.svg'

# term_png=1 draws a PNG (pngcairo) of the same chart, to look at it.
if (exists("term_png")) {
    set terminal pngcairo size 760,440 font "sans,12" background rgb "white"
} else {
    set terminal svg size 760,440 dynamic font "sans,12" background rgb "white"
}
set output outfile
set title "Share of a ViT-Base layer's multiply-adds in the n x n products (Q.K^T + A.V)"
set xlabel "sequence length n (tokens)"
set ylabel "n x n share of multiply-adds (%)"
set logscale x 2
set xrange [64:8192]
set yrange [0:100]
set format x "%g"
set xtics (64, 128, 256, 512, 1024, 2048, 4096, 8192)
set ytics 10
set grid xtics ytics lc rgb "#dddddd"
set lmargin 10
set rmargin 4
set key top left Left reverse box opaque samplen 3 spacing 1.3
# Marks: row 0 is 224 px (n = 197), row 1 is 1024 px (n = 4097). Each label sits inside the
# plot, clear of the tick labels: 197's above and right of its point, 4097's to its left.
plot datafile using 1:2 with lines lw 2 lc rgb "#1f77b4" title "2n^2d / (12nd^2 + 2n^2d) = n / (6d + n), d = 768", \
     marksfile using 1:2 with points pt 7 ps 1.2 lc rgb "#d62728" title "ViT-Base at 224 px and 1024 px", \
     marksfile every ::0::0 using 1:2:3 with labels offset char -1,2.6 left notitle, \
     marksfile every ::1::1 using 1:2:3 with labels offset char -1,0.9 right notitle
