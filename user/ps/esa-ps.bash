# bash completion for esa-ps(8)
_esa_ps()
{
	local cur prev words cword
	_init_completion || return
	case $prev in
	-c|--config) _filedir; return ;;
	--io) COMPREPLY=($(compgen -W 'udp xdp auto' -- "$cur")); return ;;
	--sums) COMPREPLY=($(compgen -W 'switch direct' -- "$cur")); return ;;
	--ifname) COMPREPLY=($(compgen -W "$(ls /sys/class/net 2>/dev/null)" -- "$cur")); return ;;
	-s|--switch|--values|--cache|--pending|-w|--window|--queue|--metrics|-i|--stats-interval|\
	--link-delay-us)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W '--config --switch --values --cache --pending --window
			--io --ifname --queue --sums --link-delay-us --metrics --stats-interval --json --quiet
			--verbose --version --help' -- "$cur"))
		return
	fi
	case $prev in
	workers) ;;
	*) COMPREPLY=($(compgen -W 'job ps workers leaves upstream ranks max-prio lease region' \
		-- "$cur")) ;;
	esac
}
complete -F _esa_ps esa-ps
